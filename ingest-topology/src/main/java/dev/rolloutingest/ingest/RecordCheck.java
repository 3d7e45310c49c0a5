package dev.rolloutingest.ingest;

import dev.rolloutingest.serde.FieldsDeserializer;
import dev.rolloutingest.serde.RecordKeys;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.RowWriter;
import dev.rolloutingest.table.rows.Tombstones;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns one input record's bytes into a row of the partition's batch, or into the reason it goes to the
 * dead-letter topic. The value is decoded straight into the batch's columns (no Avro objects in between).
 * Only failures that are the record's own fault become dead letters; a registry that cannot answer (down,
 * refusing our credentials, rate-limiting) is thrown, so the record is retried, never dead-lettered.
 */
final class RecordCheck {
    /** The outcome: a row (its key and payload size) or a dead letter. */
    record Result(String recordId, int payloadBytes, DeadLetter deadLetter) {
        static Result accepted(RowWriter.Staged row) {
            return new Result(row.recordId(), row.payloadBytes(), null);
        }

        static Result rejected(String reason, String error) {
            return new Result(null, 0, new DeadLetter(reason, error));
        }
    }

    private static final Logger log = LoggerFactory.getLogger(RecordCheck.class);

    private final String topic;
    private final FieldsDeserializer deserializer;
    private final RecordKeys keys;
    private final boolean keylessAccepted;
    private final DeadLetterLog deadLetterLog;
    private final long maxPayloadBytes;
    private final Duration registryWait;
    private final IngestMetrics metrics;

    /** The app's check: the value decoded by {@code deserializer}, keys through the same registry. */
    static RecordCheck of(IngestConfig config, String topic, FieldsDeserializer deserializer, IngestMetrics metrics) {
        return new RecordCheck(
                topic,
                deserializer,
                new RecordKeys(new SchemaRegistryClient(SerdeConfig.from(config.serdeConfig()))),
                config.keylessAccepted(),
                config.maxPayloadBytes(),
                Duration.ofMillis(config.registryWaitMs()),
                metrics,
                new DeadLetterLog(config.dlqLogIntervalMs()));
    }

    /**
     * @param keys reads the record_id a key carries (plain string or Confluent wire format)
     * @param keylessAccepted a record without a key lands (else it is dead-lettered as missing-key)
     * @param registryWait how long one record waits for a registry that cannot answer before the stream
     *     thread gives up (and is replaced, redoing its work from the last commit); keep it well under
     *     max.poll.interval.ms
     */
    RecordCheck(
            String topic,
            FieldsDeserializer deserializer,
            RecordKeys keys,
            boolean keylessAccepted,
            long maxPayloadBytes,
            Duration registryWait,
            IngestMetrics metrics,
            DeadLetterLog deadLetterLog) {
        this.topic = topic;
        this.deadLetterLog = deadLetterLog;
        this.deserializer = deserializer;
        this.keys = keys;
        this.keylessAccepted = keylessAccepted;
        this.maxPayloadBytes = maxPayloadBytes;
        this.registryWait = registryWait;
        this.metrics = metrics;
    }

    /** Where the app's partitions log their dead letters, rate-limited per reason. */
    DeadLetterLog deadLetterLog() {
        return deadLetterLog;
    }

    /**
     * Decodes the record into the batch's next row and commits it there when it passes every check; otherwise
     * the batch is left as it was and the result names the dead letter's reason.
     */
    Result accept(byte[] key, byte[] value, GenerationBatch batch, int partition, long offset, Instant ingestedAt) {
        if (value == null) {
            return tombstone(key, batch, partition, offset, ingestedAt);
        }
        if (value.length > maxPayloadBytes) {
            return Result.rejected(
                    "payload-too-large",
                    "value of " + value.length + " bytes exceeds " + IngestConfig.MAX_PAYLOAD_BYTES + "="
                            + maxPayloadBytes);
        }
        batch.requireAscending(offset); // outside the catch below: a program error, not the record's fault
        RowWriter.Staged row;
        try {
            row = waitingForRegistry(() -> deserializer.deserializeFields(
                    topic, value, (in, order) -> batch.stage(in, order, partition, offset, ingestedAt)));
        } catch (SerdeException e) {
            if (AddedColumns.REFUSED_REASON.equals(e.reason())) {
                // plain JSON has no schema id: its refusals are counted under -1
                int schemaId = value.length >= WireFormat.HEADER_LENGTH && value[0] == WireFormat.MAGIC_BYTE
                        ? WireFormat.schemaId(topic, value)
                        : -1;
                metrics.schemaRefused(schemaId, e.getMessage());
                return Result.rejected(
                        e.reason(), (schemaId < 0 ? "plain JSON" : "schema id " + schemaId) + ": " + e.getMessage());
            }
            return Result.rejected(e.reason(), e.getMessage());
        } catch (RuntimeException e) {
            return Result.rejected("not-avro", e.toString());
        }
        if (row.recordId() == null || row.recordId().isEmpty()) {
            return Result.rejected("missing-record-id", "record_id is empty");
        }
        if (key == null) {
            if (!keylessAccepted) {
                return Result.rejected(
                        "missing-key",
                        "record has no key and " + IngestConfig.KEYLESS_RECORDS + "=reject; the key must equal"
                                + " record_id " + row.recordId());
            }
            metrics.keyless();
        } else {
            String recordKey;
            try {
                recordKey = waitingForRegistry(() -> keys.recordId(topic, key));
            } catch (SerdeException e) {
                return Result.rejected(e.reason(), "key: " + e.getMessage());
            }
            if (!recordKey.equals(row.recordId())) {
                return Result.rejected(
                        "key-mismatch", "key '" + recordKey + "' differs from record_id '" + row.recordId() + "'");
            }
        }
        batch.commitStaged();
        return Result.accepted(row);
    }

    /**
     * A record with a key and no value deletes the key's record_id: it becomes a delete row of the batch
     * ({@link Tombstones}), newest-wins with the values around it.
     */
    private Result tombstone(byte[] key, GenerationBatch batch, int partition, long offset, Instant ingestedAt) {
        if (key == null) {
            return Result.rejected("null-value", "record has neither a key nor a value: nothing to write or delete");
        }
        String recordId;
        try {
            recordId = waitingForRegistry(() -> keys.recordId(topic, key));
        } catch (SerdeException e) {
            return Result.rejected(e.reason(), "key of a delete: " + e.getMessage());
        }
        if (recordId.isEmpty()) {
            return Result.rejected("missing-record-id", "a delete (null value) whose key is empty");
        }
        batch.requireAscending(offset);
        batch.append(Tombstones.of(recordId, ingestedAt), partition, offset, ingestedAt);
        metrics.tombstone();
        return new Result(recordId, 0, null);
    }

    /**
     * Decodes; while the registry cannot answer (down, 401/403, 429), waits and tries again instead of
     * blaming the record. Past {@code registryWait} the failure is thrown: the thread is replaced and the
     * record redone from the last commit, still never dead-lettered.
     */
    private <R> R waitingForRegistry(Supplier<R> decode) {
        long deadline = System.nanoTime() + registryWait.toNanos();
        long lastLog = 0;
        while (true) {
            try {
                return decode.get();
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
