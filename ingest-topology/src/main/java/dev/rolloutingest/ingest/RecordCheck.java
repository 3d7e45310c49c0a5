package dev.rolloutingest.ingest;

import dev.rolloutingest.serde.FieldsDeserializer;
import dev.rolloutingest.serde.RecordKeys;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.RowWriter;
import dev.rolloutingest.table.rows.Tombstones;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.apache.kafka.common.header.Headers;
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
    record Result(String recordId, String table, int payloadBytes, DeadLetter deadLetter) {
        static Result accepted(RowWriter.Staged row, String table) {
            return new Result(row.recordId(), table, row.payloadBytes(), null);
        }

        static Result rejected(String reason, String error) {
            return new Result(null, null, 0, new DeadLetter(reason, error));
        }
    }

    /** The table of a one-table deployment: every record goes there. */
    private static final TableRoute.Decision SINGLE_TABLE = new TableRoute.Decision(TableCatalog.SINGLE, null, null);

    private static final Logger log = LoggerFactory.getLogger(RecordCheck.class);
    static final String TABLE_CAP = "table-cap";

    /** A value whose decoder failed with an unexpected error (the error says how); the format's own reasons otherwise. */
    static final String UNDECODABLE = "undecodable";

    private final FieldsDeserializer deserializer;
    /** Null for a one-table deployment. */
    private final TableRoute route;

    private final RecordKeys keys;
    private final boolean keylessAccepted;
    private final DeadLetterLog deadLetterLog;
    private final long maxPayloadBytes;
    private final Duration registryWait;
    private final IngestMetrics metrics;

    /** The app's check: the value decoded by {@code deserializer}, keys through the same registry. */
    static RecordCheck of(IngestConfig config, FieldsDeserializer deserializer, IngestMetrics metrics) {
        SerdeConfig serde = SerdeConfig.from(config.serdeConfig());
        return new RecordCheck(
                deserializer,
                config.manyTables() ? config.input().tableRoute() : null,
                new RecordKeys(new SchemaRegistryClient(serde), serde.cacheCapacity()),
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
            FieldsDeserializer deserializer,
            TableRoute route,
            RecordKeys keys,
            boolean keylessAccepted,
            long maxPayloadBytes,
            Duration registryWait,
            IngestMetrics metrics,
            DeadLetterLog deadLetterLog) {
        this.route = route;
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
     * Decodes the record into the next row of its table's batch and commits it there when it passes every check;
     * otherwise every batch is left as it was and the result names the dead letter's reason. The table comes from
     * the route: before decoding when the route needs no field, else from the decoded row (then decoded into the
     * landing batch and moved to its table's batch).
     */
    Result accept(
            String topic,
            byte[] key,
            byte[] value,
            Headers headers,
            RoutedBatch batches,
            int partition,
            long offset,
            Instant ingestedAt) {
        if (value == null) {
            return tombstone(topic, key, headers, batches, partition, offset, ingestedAt);
        }
        if (value.length > maxPayloadBytes) {
            return Result.rejected(
                    "payload-too-large",
                    "value of " + value.length + " bytes exceeds " + IngestConfig.MAX_PAYLOAD_BYTES + "="
                            + maxPayloadBytes);
        }
        boolean routedByFields = route != null && route.needsFields();
        TableRoute.Decision decision = null;
        GenerationBatch batch;
        if (routedByFields) {
            batch = batches.landing();
        } else {
            decision = route(topic, headers, null);
            if (decision.refused()) {
                return Result.rejected(decision.reason(), decision.error());
            }
            try {
                batch = batches.forTable(decision.table());
            } catch (RolloutTableException.TableCap e) {
                return Result.rejected(TABLE_CAP, e.getMessage());
            }
        }
        batch.requireAscending(offset); // outside the catch below: a program error, not the record's fault
        RowWriter.Staged row;
        try {
            row = waitingForRegistry(
                    () -> deserializer.deserializeFields(topic, value, batch.rowReader(partition, offset, ingestedAt)));
        } catch (SerdeException e) {
            return decodeFailure(topic, value, e);
        } catch (RuntimeException e) {
            // a decoder failing other than on the record's bytes it names (any format: not only Avro)
            return Result.rejected(UNDECODABLE, e.toString());
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
        if (!routedByFields) {
            batch.commitStaged();
            return Result.accepted(row, decision.table());
        }
        decision = route(topic, headers, batch::stagedString);
        if (decision.refused()) {
            return Result.rejected(decision.reason(), decision.error());
        }
        try {
            batch.moveStagedTo(batches.forTable(decision.table()));
        } catch (RolloutTableException.TableCap e) {
            return Result.rejected(TABLE_CAP, e.getMessage());
        } catch (SerdeException e) {
            return decodeFailure(topic, value, e);
        }
        return Result.accepted(row, decision.table());
    }

    private TableRoute.Decision route(String topic, Headers headers, UnaryOperator<String> field) {
        return route == null ? SINGLE_TABLE : route.route(topic, headers, field);
    }

    private Result decodeFailure(String topic, byte[] value, SerdeException e) {
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
    }

    /**
     * A record with a key and no value deletes the key's record_id: it becomes a delete row of its table's batch
     * ({@link Tombstones}), newest-wins with the values around it. It has no fields to route by: a route by field
     * takes its table from the {@value TableRoute#TABLE_HEADER} header.
     */
    private Result tombstone(
            String topic,
            byte[] key,
            Headers headers,
            RoutedBatch batches,
            int partition,
            long offset,
            Instant ingestedAt) {
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
        TableRoute.Decision decision = route(topic, headers, null);
        if (decision.refused()) {
            return Result.rejected(decision.reason(), decision.error());
        }
        GenerationBatch batch;
        try {
            batch = batches.forTable(decision.table());
        } catch (RolloutTableException.TableCap e) {
            return Result.rejected(TABLE_CAP, e.getMessage());
        }
        batch.requireAscending(offset);
        batch.append(Tombstones.of(recordId, ingestedAt), partition, offset, ingestedAt);
        metrics.tombstone();
        return new Result(recordId, decision.table(), 0, null);
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
