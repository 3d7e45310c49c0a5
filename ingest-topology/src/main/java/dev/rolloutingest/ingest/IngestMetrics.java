package dev.rolloutingest.ingest;

import dev.rolloutingest.runtime.TableSeries;
import dev.rolloutingest.table.rows.AddedColumns;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.LoggerFactory;

/** The ingest topology's meters. No experiment, shard or partition tags (cardinality). */
final class IngestMetrics {
    private final MeterRegistry registry;
    private final Counter recordsIn;
    private final Counter skippedReplays;
    private final DistributionSummary blobBytes;
    private final Counter largeBlobs;
    private final Counter adopted;
    private final Counter pressureSeals;
    private final Counter droppedFieldRecords;
    private final Set<Integer> schemasWithDroppedFields = ConcurrentHashMap.newKeySet();
    private final Counter protobufUnknownFields;
    private final Set<Integer> schemasWithUnknownFields = ConcurrentHashMap.newKeySet();

    private final TableSeries tableSeries;
    private final Map<String, Counter> tableRows = new ConcurrentHashMap<>();

    public IngestMetrics(MeterRegistry registry, InflightBudget budget) {
        this(registry, budget, new TableSeries(TableSeries.DEFAULT_MAX));
    }

    public IngestMetrics(MeterRegistry registry, InflightBudget budget, TableSeries tableSeries) {
        this.registry = registry;
        this.tableSeries = tableSeries;
        this.recordsIn = Counter.builder("rollout.ingest.records")
                .description("Records read from the input topic")
                .register(registry);
        this.skippedReplays = Counter.builder("rollout.ingest.replayed.records")
                .description("Records skipped because their offsets were already sealed")
                .register(registry);
        // Unlabelled on purpose: one histogram of every inline payload's size.
        this.blobBytes = DistributionSummary.builder("rollout.blob.bytes")
                .baseUnit("bytes")
                .description("Size of each inline binary_payload")
                .serviceLevelObjectives(1 << 10, 1 << 14, 1 << 16, 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28)
                .register(registry);
        this.largeBlobs = Counter.builder("rollout.blob.large")
                .description("Payloads at or over the large-blob log threshold")
                .register(registry);
        this.adopted = Counter.builder("rollout.ingest.adopted.generations")
                .description("Generations written before a restart and announced after it")
                .register(registry);
        this.pressureSeals = Counter.builder("rollout.ingest.inflight.pressure")
                .description("Times the in-flight byte budget forced early seals")
                .register(registry);
        this.droppedFieldRecords = Counter.builder("rollout.ingest.dropped.fields.records")
                .description(
                        "Records whose writer schema has fields the table lacks (values dropped by schema resolution)")
                .register(registry);
        this.protobufUnknownFields = Counter.builder("rollout.ingest.protobuf.unknown.fields")
                .description("Field numbers Protobuf values carried that their schema lacks, skipped as Protobuf"
                        + " skips them (once per record and number)")
                .register(registry);
        // Visible at 0 from the start, so dashboards and alerts have the series before the first failure.
        for (String cause : new String[] {"storage", "data"}) {
            Counter.builder("rollout.ingest.seal.failures")
                    .tag("cause", cause)
                    .description("Seal attempts that failed: storage (the write as a whole) or data (rows refused)")
                    .register(registry);
        }
        for (String reason : new String[] {"registry-unavailable", "registry-error"}) {
            Counter.builder("rollout.ingest.registry.waits")
                    .tag("reason", reason)
                    .description("Records that waited for a schema registry that could not answer")
                    .register(registry);
        }
        Counter.builder("rollout.ingest.expired.records")
                .description("Records retention removed before they were sealed: lost")
                .register(registry);
        Gauge.builder("rollout.ingest.inflight.bytes", budget, InflightBudget::total)
                .baseUnit("bytes")
                .description("Bytes buffered for sealing across partitions")
                .register(registry);
    }

    /** A row accepted into a table's batch (its table's series, or table=_other past the cap). */
    void tableRow(String table) {
        tableRows
                .computeIfAbsent(table, t -> Counter.builder("rollout.ingest.table.rows")
                        .description("Rows accepted per table (deletes included); tables past"
                                + " rollout.metrics.tables.max share table=_other")
                        .tag("table", tableSeries.tag(t))
                        .register(registry))
                .increment();
    }

    void recordIn() {
        recordsIn.increment();
    }

    void skippedReplay() {
        skippedReplays.increment();
    }

    void blob(long bytes, boolean large) {
        blobBytes.record(bytes);
        if (large) {
            largeBlobs.increment();
        }
    }

    void adopted() {
        adopted.increment();
    }

    void expired(long records) {
        registry.counter("rollout.ingest.expired.records").increment(records);
    }

    void pressure() {
        pressureSeals.increment();
    }

    /** A seal attempt failed; cause: storage (the write failed as a whole) | data (rows the table refuses). */
    void sealFailure(String cause) {
        registry.counter("rollout.ingest.seal.failures", "cause", cause).increment();
    }

    /** A record waited for a schema registry that could not answer (reason: registry-unavailable | registry-error). */
    void registryWait(String reason) {
        registry.counter("rollout.ingest.registry.waits", "reason", reason).increment();
    }

    /**
     * A record was written with a schema holding fields the table's schema lacks: the values are dropped by
     * Avro resolution. Counted per record, logged once per schema id, so a dropped field is never silent.
     */
    private final Set<Integer> schemasRefused = ConcurrentHashMap.newKeySet();

    void droppedFields(int schemaId, List<String> fields) {
        droppedFieldRecords.increment();
        if (schemasWithDroppedFields.add(schemaId)) {
            LoggerFactory.getLogger(IngestMetrics.class)
                    .warn(
                            "{} carry fields the table does not have; their values are dropped: {}",
                            written(schemaId),
                            fields);
        }
    }

    /**
     * A Protobuf record carried field numbers its schema lacks (a producer's newer schema than the one it names):
     * skipped, as Protobuf skips them; counted per record and number, the schema id named once in a WARN.
     */
    void protobufUnknownFields(int schemaId, List<String> numbers) {
        protobufUnknownFields.increment(numbers.size());
        if (schemasWithUnknownFields.add(schemaId)) {
            LoggerFactory.getLogger(IngestMetrics.class)
                    .warn(
                            "{} carry field numbers {} their schema does not have (a producer's newer schema):"
                                    + " skipped; rollout_ingest_protobuf_unknown_fields_total counts them",
                            written(schemaId),
                            numbers);
        }
    }

    /** A schema id whose added fields become columns of the table (rollout.schema.evolution): said once. */
    void addedFields(int schemaId, List<String> fields) {
        LoggerFactory.getLogger(IngestMetrics.class)
                .info(
                        "{} add the fields {}: they become columns of the table (rows written before read null)",
                        written(schemaId),
                        fields);
    }

    /**
     * A record whose schema adds a field the table cannot take (a reserved name, a union of types, a type the
     * column's cannot be promoted from): dead-lettered, counted per schema id, the schema id named once in a WARN.
     */
    void schemaRefused(int schemaId, String why) {
        registry.counter("rollout.ingest.schema.refused.records", "schema_id", Integer.toString(schemaId))
                .increment();
        if (schemasRefused.add(schemaId)) {
            LoggerFactory.getLogger(IngestMetrics.class)
                    .warn(
                            "{} are refused (to the DLQ, reason {}): {}. Fix the producer's schema;"
                                    + " rollout_ingest_schema_refused_records_total counts them",
                            written(schemaId),
                            AddedColumns.REFUSED_REASON,
                            why);
        }
    }

    /** Whose records a log line is about: a schema id's, or plain JSON's (no schema, id -1). */
    private static String written(int schemaId) {
        return schemaId < 0 ? "Plain JSON records" : "Records written with schema id " + schemaId;
    }

    void dlq(String reason) {
        registry.counter("rollout.ingest.dlq.records", "reason", reason).increment();
    }

    /** A delete (a key with a null value) sealed with its partition's records. */
    void tombstone() {
        registry.counter("rollout.ingest.tombstones").increment();
    }

    /** A record without a key, accepted with the record_id of its value. */
    void keyless() {
        registry.counter("rollout.ingest.keyless.records").increment();
    }

    /** trigger: rows | bytes | age | pressure | recovery; result: success | failure | empty. */
    void seal(String trigger, String result, Duration duration) {
        registry.counter("rollout.ingest.seals", "trigger", trigger, "result", result)
                .increment();
        Timer.builder("rollout.ingest.seal.duration")
                .tag("trigger", trigger)
                .tag("result", result)
                .register(registry)
                .record(duration);
    }
}
