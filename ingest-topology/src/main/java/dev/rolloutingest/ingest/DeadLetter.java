package dev.rolloutingest.ingest;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/** Why a record went to the DLQ: a short reason (metric tag, header) and a human-readable error. */
record DeadLetter(String reason, String error) {
    static final String REASON = "rollout.dlq.reason";
    static final String ERROR = "rollout.dlq.error";
    static final String SOURCE_TOPIC = "rollout.dlq.source.topic";
    static final String SOURCE_PARTITION = "rollout.dlq.source.partition";
    static final String SOURCE_OFFSET = "rollout.dlq.source.offset";

    /** The original headers plus ours; the original key and value bytes travel unchanged. */
    Headers headers(Headers original, String topic, int partition, long offset) {
        Headers headers = original == null ? new RecordHeaders() : new RecordHeaders(original.toArray());
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
