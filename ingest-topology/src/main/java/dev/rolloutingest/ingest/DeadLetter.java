package dev.rolloutingest.ingest;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/** Why a record went to the DLQ: a short reason (metric tag, header) and a human-readable error. */
record DeadLetter(String reason, String error) {
    static final String PREFIX = "rollout.dlq.";
    static final String PRODUCER_PREFIX = "producer.";
    static final String REASON = "rollout.dlq.reason";
    static final String ERROR = "rollout.dlq.error";
    static final String SOURCE_TOPIC = "rollout.dlq.source.topic";
    static final String SOURCE_PARTITION = "rollout.dlq.source.partition";
    static final String SOURCE_OFFSET = "rollout.dlq.source.offset";

    /**
     * The original headers plus ours; the original key and value bytes travel unchanged. A producer header
     * that uses one of our names is kept as {@code producer.<name>}, so a reader of the DLQ can trust ours.
     */
    Headers headers(Headers original, String topic, int partition, long offset) {
        Headers headers = new RecordHeaders();
        if (original != null) {
            for (Header header : original) {
                headers.add(
                        header.key().startsWith(PREFIX) ? PRODUCER_PREFIX + header.key() : header.key(),
                        header.value());
            }
        }
        headers.add(REASON, reason.getBytes(StandardCharsets.UTF_8));
        headers.add(ERROR, truncate(error).getBytes(StandardCharsets.UTF_8));
        headers.add(SOURCE_TOPIC, topic.getBytes(StandardCharsets.UTF_8));
        headers.add(SOURCE_PARTITION, Integer.toString(partition).getBytes(StandardCharsets.UTF_8));
        headers.add(SOURCE_OFFSET, Long.toString(offset).getBytes(StandardCharsets.UTF_8));
        return headers;
    }

    private static String truncate(String text) {
        String value = text == null ? "" : text;
        return value.length() <= 2000 ? value : value.substring(0, 2000) + "...";
    }
}
