package dev.rolloutingest.ingest;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.SerdeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.kafka.common.serialization.Deserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns one input record's bytes into a {@link Rollout}, or into the reason it goes to the dead-letter
 * topic. Only failures that are the record's own fault become dead letters; a registry that cannot answer
 * (down, refusing our credentials, rate-limiting) is thrown, so the record is retried, never dead-lettered.
 */
final class RecordCheck {
    /** The outcome: exactly one of the two is set. */
    record Result(Rollout rollout, DeadLetter deadLetter) {
        static Result accepted(Rollout rollout) {
            return new Result(rollout, null);
        }

        static Result rejected(String reason, String error) {
            return new Result(null, new DeadLetter(reason, error));
        }
    }

    private static final Logger log = LoggerFactory.getLogger(RecordCheck.class);

    private final String topic;
    private final Deserializer<Rollout> deserializer;
    private final long maxPayloadBytes;
    private final Duration registryWait;
    private final IngestMetrics metrics;

    /**
     * @param registryWait how long one record waits for a registry that cannot answer before the stream
     *     thread gives up (and is replaced, redoing its work from the last commit); keep it well under
     *     max.poll.interval.ms
     */
    RecordCheck(
            String topic,
            Deserializer<Rollout> deserializer,
            long maxPayloadBytes,
            Duration registryWait,
            IngestMetrics metrics) {
        this.topic = topic;
        this.deserializer = deserializer;
        this.maxPayloadBytes = maxPayloadBytes;
        this.registryWait = registryWait;
        this.metrics = metrics;
    }

    Result check(byte[] key, byte[] value) {
        if (value == null) {
            return Result.rejected("null-value", "record has no value (tombstone)");
        }
        if (value.length > maxPayloadBytes) {
            return Result.rejected(
                    "payload-too-large",
                    "value of " + value.length + " bytes exceeds " + IngestConfig.MAX_PAYLOAD_BYTES + "="
                            + maxPayloadBytes);
        }
        Rollout rollout;
        try {
            rollout = decodeWaitingForRegistry(value);
        } catch (SerdeException e) {
            return Result.rejected(e.reason(), e.getMessage());
        } catch (RuntimeException e) {
            return Result.rejected("not-avro", e.toString());
        }
        if (rollout == null) {
            return Result.rejected("null-value", "record value decodes to nothing");
        }
        if (rollout.getRecordId() == null || rollout.getRecordId().isEmpty()) {
            return Result.rejected("missing-record-id", "record_id is empty");
        }
        if (key == null) {
            return Result.rejected(
                    "missing-key", "record has no key; the key must equal record_id " + rollout.getRecordId());
        }
        String recordKey = new String(key, StandardCharsets.UTF_8);
        if (!recordKey.equals(rollout.getRecordId())) {
            return Result.rejected(
                    "key-mismatch", "key '" + recordKey + "' differs from record_id '" + rollout.getRecordId() + "'");
        }
        return Result.accepted(rollout);
    }

    /**
     * Decodes; while the registry cannot answer (down, 401/403, 429), waits and tries again instead of
     * blaming the record. Past {@code registryWait} the failure is thrown: the thread is replaced and the
     * record redone from the last commit, still never dead-lettered.
     */
    private Rollout decodeWaitingForRegistry(byte[] value) {
        long deadline = System.nanoTime() + registryWait.toNanos();
        long lastLog = 0;
        while (true) {
            try {
                return deserializer.deserialize(topic, value);
            } catch (SerdeException e) {
                if (e.recordsFault()) {
                    throw e;
                }
                metrics.registryWait(e.reason());
                long now = System.nanoTime();
                if (now > deadline) {
                    throw e;
                }
                if (now - lastLog > 10_000_000_000L) {
                    lastLog = now;
                    log.warn(
                            "Schema registry cannot answer ({}); the record waits, it is not dead-lettered: {}",
                            e.reason(),
                            e.getMessage());
                }
                try {
                    Thread.sleep(500);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }
}
