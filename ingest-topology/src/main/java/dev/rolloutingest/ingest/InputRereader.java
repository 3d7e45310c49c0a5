package dev.rolloutingest.ingest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a partition's records again from the input topic, with a consumer of its own (read_committed, in the
 * application's group without joining it, reset "none"): Kafka is the log, so records processed but not sealed before
 * a restart, and the exact bytes of a record to dead-letter, come from there rather than from memory.
 */
final class InputRereader {
    private static final Logger log = LoggerFactory.getLogger(InputRereader.class);

    /** Handles one re-read record. */
    @FunctionalInterface
    interface Handler {
        void accept(ConsumerRecord<byte[], byte[]> record);
    }

    private final Function<TopicPartition, Consumer<byte[], byte[]>> consumers;
    private final IngestMetrics metrics;
    private final Duration timeout;

    InputRereader(
            Function<TopicPartition, Consumer<byte[], byte[]>> consumers, IngestMetrics metrics, Duration timeout) {
        this.consumers = consumers;
        this.metrics = metrics;
        this.timeout = timeout;
    }

    /**
     * Feeds every committed record in [from, to) to the handler, in offset order. Records retention removed
     * before they were sealed cannot come back: they are logged as LOST and counted, never skipped silently.
     *
     * @return the number of records handled
     */
    int reread(TopicPartition tp, long from, long to, Handler handler) {
        int handled = 0;
        try (Consumer<byte[], byte[]> reader = consumers.apply(tp)) {
            reader.assign(List.of(tp));
            reader.seek(tp, from);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (reader.position(tp) < to) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("re-reading offsets [" + from + ", " + to + ") of " + tp
                            + " did not finish in " + timeout.toSeconds() + " s");
                }
                ConsumerRecords<byte[], byte[]> polled;
                try {
                    polled = reader.poll(Duration.ofMillis(500));
                } catch (OffsetOutOfRangeException e) {
                    long earliest = reader.beginningOffsets(List.of(tp)).get(tp);
                    long resumeAt = Math.min(earliest, to);
                    metrics.expired(resumeAt - reader.position(tp));
                    log.error(
                            "{}: records [{}, {}) expired from the topic before they were sealed and are LOST; raise"
                                    + " the topic's retention above the seal age",
                            tp,
                            reader.position(tp),
                            resumeAt);
                    reader.seek(tp, resumeAt);
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : polled) {
                    if (record.offset() >= from && record.offset() < to) {
                        handler.accept(record);
                        handled++;
                    }
                }
            }
        }
        return handled;
    }

    /**
     * The offset the application's group committed for the partition (where Streams resumes it), waiting for a
     * transaction still open on it (read_committed asks for stable offsets); empty when none is committed.
     */
    OptionalLong committedOffset(TopicPartition tp) {
        try (Consumer<byte[], byte[]> reader = consumers.apply(tp)) {
            OffsetAndMetadata committed = reader.committed(Set.of(tp), timeout).get(tp);
            return committed == null ? OptionalLong.empty() : OptionalLong.of(committed.offset());
        }
    }

    /** The committed records at exactly these offsets (absent ones, expired or never committed, are left out). */
    List<ConsumerRecord<byte[], byte[]>> fetch(TopicPartition tp, Set<Long> offsets) {
        List<ConsumerRecord<byte[], byte[]>> found = new ArrayList<>();
        if (offsets.isEmpty()) {
            return found;
        }
        TreeSet<Long> wanted = new TreeSet<>(offsets);
        try (Consumer<byte[], byte[]> reader = consumers.apply(tp)) {
            reader.assign(List.of(tp));
            long earliest = reader.beginningOffsets(List.of(tp)).get(tp);
            long end = reader.endOffsets(List.of(tp)).get(tp);
            long first = Math.max(wanted.first(), earliest);
            long last = Math.min(wanted.last(), end - 1);
            if (first > last) {
                return found;
            }
            reader.seek(tp, first);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (reader.position(tp) <= last && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : reader.poll(Duration.ofMillis(500))) {
                    if (wanted.contains(record.offset())) {
                        found.add(record);
                    }
                }
            }
        }
        return found;
    }
}
