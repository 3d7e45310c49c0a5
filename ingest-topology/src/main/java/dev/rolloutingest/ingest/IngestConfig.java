package dev.rolloutingest.ingest;

import static dev.rolloutingest.runtime.CommonKeys.*;
import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.BOOLEAN;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import dev.rolloutingest.runtime.AppConfig;
import dev.rolloutingest.runtime.CommonKeys;
import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.serde.values.ValueFormats;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;

/**
 * Every setting of ingest-topology: key, type, default, doc. Each key is also an env var (upper case,
 * dots as underscores), which wins over the properties file. A bad value fails at start naming the key. The input's
 * keys (topics, routes, tables) are declared, read and checked by {@link InputSettings}; every key is named here.
 *
 * <p>Over 300 lines because it declares every other setting of the ingest app (seals, dead letters, records, lag,
 * health), one define each with its doc, default and range.
 */
public final class IngestConfig extends AppConfig {
    public static final String INPUT_TOPIC = InputSettings.INPUT_TOPIC;
    public static final String INPUT_TOPICS = InputSettings.INPUT_TOPICS;
    public static final String INPUT_TOPIC_PATTERN = InputSettings.INPUT_TOPIC_PATTERN;
    public static final String INPUT_TOPIC_REFRESH_MS = InputSettings.INPUT_TOPIC_REFRESH_MS;
    public static final String TABLE_ROUTE = InputSettings.TABLE_ROUTE;
    public static final String TABLE_NAME_ALLOW = InputSettings.TABLE_NAME_ALLOW;
    public static final String TABLES_DECLARED = InputSettings.TABLES_DECLARED;
    /** A record header naming the record's table outright (how a delete, which has no fields, names it). */
    public static final String TABLE_HEADER = "rollout-table";

    public static final String GENERATIONS_TOPIC = CommonKeys.GENERATIONS_TOPIC;
    public static final String DLQ_TOPIC = "rollout.dlq.topic";
    public static final String SEAL_MAX_ROWS = "rollout.seal.max.rows";
    public static final String SEAL_MAX_BYTES = "rollout.seal.max.bytes";
    public static final String SEAL_MAX_AGE_MS = "rollout.seal.max.age.ms";
    public static final String SEAL_CHECK_INTERVAL_MS = "rollout.seal.check.interval.ms";
    public static final String SEAL_WRITE_ATTEMPTS = "rollout.seal.write.attempts";
    public static final String SEAL_WRITE_THREADS = "rollout.seal.write.threads";
    public static final String STREAM_THREADS = "rollout.stream.threads";
    public static final String MAX_INFLIGHT_BLOB_BYTES = "rollout.max.inflight.blob.bytes";
    public static final String LARGE_BLOB_LOG_BYTES = "rollout.large.blob.log.bytes";
    public static final String MAX_PAYLOAD_BYTES = "rollout.max.payload.bytes";
    public static final String KEYLESS_RECORDS = "rollout.input.keyless.records";
    public static final String SCHEMA_EVOLUTION = "rollout.schema.evolution";
    public static final String DLQ_LOG_INTERVAL_MS = "rollout.dlq.log.interval.ms";
    public static final String REGISTRY_WAIT_MS = "rollout.registry.wait.ms";
    public static final String SEALED_LAG_GROUP = "rollout.lag.sealed.group";
    static final String SEALED_LAG_GROUP_DEFAULT = "<application.id>-sealed";
    public static final String HEALTH_STUCK_AFTER_MS = "rollout.health.stuck.after.ms";

    public static final String VALUE_FORMAT = ValueFormats.FORMAT;
    public static final String VALUE_FORMATS = ValueFormats.FORMATS;

    public static final ConfigDef DEFINITION = InputSettings.define(ValueFormats.define(
                    CommonKeys.define("rollout-ingest", "data/ingest-state", 8090, "/metrics, /health")))
            .define(
                    DLQ_TOPIC,
                    STRING,
                    "rollouts-dlq",
                    new ConfigDef.NonEmptyString(),
                    MEDIUM,
                    "Dead-letter topic: unusable records with headers naming the reason and source")
            .define(
                    SEAL_MAX_ROWS,
                    INT,
                    10_000,
                    ConfigDef.Range.atLeast(1),
                    HIGH,
                    "Seal a partition's batch when one table's part of it holds this many records (with one table: the"
                            + " batch); the batch over all its tables is bounded by rollout.seal.max.bytes")
            .define(
                    SEAL_MAX_BYTES,
                    LONG,
                    32L << 20,
                    ConfigDef.Range.atLeast(1),
                    HIGH,
                    "Seal a partition's batch when its records' bytes reach this. At most half of lance-core's merge"
                            + " memory pool (LANCE_MEM_POOL_SIZE, 100 MiB by default): a generation is merged in one"
                            + " commit, which holds it there")
            .define(
                    SEAL_MAX_AGE_MS,
                    LONG,
                    30_000L,
                    ConfigDef.Range.atLeast(1),
                    HIGH,
                    "Seal a partition's batch when its oldest record waited this long (wall clock)")
            .define(
                    SEAL_CHECK_INTERVAL_MS,
                    LONG,
                    250L,
                    ConfigDef.Range.between(10, 60_000),
                    LOW,
                    "How often the age and memory-pressure triggers are checked")
            .define(
                    SEAL_WRITE_ATTEMPTS,
                    INT,
                    5,
                    ConfigDef.Range.between(1, 100),
                    LOW,
                    "Attempts to write a generation (exponential backoff from 200 ms) before the stream thread fails"
                            + " and is replaced, redoing the batch from the last commit")
            .define(
                    STREAM_THREADS,
                    INT,
                    0,
                    ConfigDef.Range.between(0, 256),
                    MEDIUM,
                    "Stream threads of this instance (Kafka Streams' num.stream.threads), each reading, decoding and"
                            + " batching its share of the input partitions on a core of its own; 0 = one per core the"
                            + " JVM sees. Each costs a consumer, a transactional producer and its batches' memory"
                            + " (all within " + MAX_INFLIGHT_BLOB_BYTES + "); threads beyond the input"
                            + " partitions idle")
            .define(
                    SEAL_WRITE_THREADS,
                    INT,
                    2,
                    ConfigDef.Range.between(0, 64),
                    MEDIUM,
                    "Threads writing sealed batches as generations while the stream threads go on with the next batch"
                            + " (one write per partition at a time; 0 = write on the stream thread). Each write in"
                            + " flight holds its batch (within " + MAX_INFLIGHT_BLOB_BYTES + ") and lance-core's"
                            + " encoding takes a core while it runs: 2 keeps writes overlapping the stream threads"
                            + " without them waiting on one another")
            .define(
                    MAX_INFLIGHT_BLOB_BYTES,
                    LONG,
                    512L << 20,
                    ConfigDef.Range.atLeast(0),
                    HIGH,
                    "ROLLOUT_MAX_INFLIGHT_BLOB_BYTES: bytes buffered for sealing across all partitions of this"
                            + " instance, batches being written included; when reached, the largest buffer seals early"
                            + " (0 = no limit)")
            .define(
                    LARGE_BLOB_LOG_BYTES,
                    LONG,
                    16L << 20,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "ROLLOUT_LARGE_BLOB_LOG_BYTES: a payload of at least this size logs a warn with experiment and"
                            + " record_id (inclusive; 0 disables)")
            .define(
                    KEYLESS_RECORDS,
                    STRING,
                    "accept",
                    ConfigDef.ValidString.in("accept", "reject"),
                    MEDIUM,
                    "Records without a key: accept (record_id from the value; counted in"
                            + " rollout_ingest_keyless_records_total) or reject (to the DLQ, reason missing-key). A"
                            + " keyless producer's records of one record_id may land in different partitions: the"
                            + " newest-wins rule across partitions (ingested_at) decides between them")
            .define(
                    SCHEMA_EVOLUTION,
                    BOOLEAN,
                    true,
                    MEDIUM,
                    "Fields a producer's newer schema adds to Rollout become nullable columns of the table (true:"
                            + " rows written before read null; a field the table cannot take goes to the DLQ, reason"
                            + " schema-refused), or are dropped (false: counted in"
                            + " rollout_ingest_dropped_fields_records_total, logged once per schema id)")
            .define(
                    DLQ_LOG_INTERVAL_MS,
                    LONG,
                    10_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "Dead letters log at most one line per reason in this interval, with the count of records it"
                            + " stands for (the DLQ and rollout_ingest_dlq_records_total still have every one; 0 = a"
                            + " line per record)")
            .define(
                    MAX_PAYLOAD_BYTES,
                    LONG,
                    1_000_000L,
                    ConfigDef.Range.atLeast(1),
                    MEDIUM,
                    "Hard limit of one record's serialized value; larger records go to the DLQ (reason"
                            + " payload-too-large). Keep it below the broker's message.max.bytes and the topic's"
                            + " max.message.bytes (1048588 by default) or the broker refuses such records before this"
                            + " check can see them; raise all three together for larger payloads")
            .define(
                    SEALED_LAG_GROUP,
                    STRING,
                    SEALED_LAG_GROUP_DEFAULT,
                    null,
                    MEDIUM,
                    "Consumer group (no consumer ever joins it) whose committed offsets are each input partition's first"
                            + " offset not yet in the table: standard lag tools show it as the records not yet sealed."
                            + " Empty disables")
            .define(
                    REGISTRY_WAIT_MS,
                    LONG,
                    60_000L,
                    ConfigDef.Range.between(0, 240_000),
                    LOW,
                    "How long a record waits for a schema registry that cannot answer (down, 401/403, 429) before the"
                            + " stream thread is replaced; such records are retried, never dead-lettered. Keep it under"
                            + " the consumer's max.poll.interval.ms")
            .define(
                    HEALTH_STUCK_AFTER_MS,
                    LONG,
                    0L,
                    ConfigDef.Range.atLeast(0),
                    LOW,
                    "/health answers 503 when a partition has held unsealed records longer than this (0 = three times "
                            + SEAL_MAX_AGE_MS + ")");

    private final InputSettings input;

    private IngestConfig(Map<String, Object> raw) {
        super(DEFINITION, raw);
        requireWithinMergeMemory(SEAL_MAX_BYTES);
        Object streamsThreads = raw.get(ConfigSources.STREAMS_PREFIX + StreamsConfig.NUM_STREAM_THREADS_CONFIG);
        if (streamsThreads != null) {
            throw new ConfigException(
                    ConfigSources.STREAMS_PREFIX + StreamsConfig.NUM_STREAM_THREADS_CONFIG,
                    streamsThreads,
                    "the ingest app's stream threads are " + STREAM_THREADS);
        }
        this.input = new InputSettings(parsed, manyTables());
    }

    public static IngestConfig load(Properties file, Map<String, String> env) {
        return new IngestConfig(ConfigSources.resolve(DEFINITION, file, env));
    }

    public static IngestConfig of(Map<String, ?> values) {
        return new IngestConfig(new HashMap<>(values));
    }

    /** Which topics are read, and which table each record goes to. */
    public InputSettings input() {
        return input;
    }

    /** The stream threads; new topics of the pattern are found at the consumers' metadata refresh. */
    @Override
    public Properties streamsProperties() {
        Properties props = super.streamsProperties();
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, streamThreads());
        if (input.inputPattern() != null) {
            props.putIfAbsent(
                    StreamsConfig.consumerPrefix(ConsumerConfig.METADATA_MAX_AGE_CONFIG),
                    Long.toString(input.refreshMs()));
        }
        return props;
    }

    /** {@link #STREAM_THREADS}, its 0 resolved to the cores this JVM sees. */
    public int streamThreads() {
        int configured = parsed.getInt(STREAM_THREADS);
        return configured > 0 ? configured : Runtime.getRuntime().availableProcessors();
    }

    public String generationsTopic() {
        return parsed.getString(GENERATIONS_TOPIC);
    }

    public String dlqTopic() {
        return parsed.getString(DLQ_TOPIC);
    }

    public int sealMaxRows() {
        return parsed.getInt(SEAL_MAX_ROWS);
    }

    public long sealMaxBytes() {
        return parsed.getLong(SEAL_MAX_BYTES);
    }

    public long sealMaxAgeMs() {
        return parsed.getLong(SEAL_MAX_AGE_MS);
    }

    public long sealCheckIntervalMs() {
        return parsed.getLong(SEAL_CHECK_INTERVAL_MS);
    }

    public int sealWriteAttempts() {
        return parsed.getInt(SEAL_WRITE_ATTEMPTS);
    }

    public int sealWriteThreads() {
        return parsed.getInt(SEAL_WRITE_THREADS);
    }

    public long maxInflightBlobBytes() {
        return parsed.getLong(MAX_INFLIGHT_BLOB_BYTES);
    }

    public long largeBlobLogBytes() {
        return parsed.getLong(LARGE_BLOB_LOG_BYTES);
    }

    /** How each input topic's values are read. */
    public ValueFormats valueFormats() {
        return ValueFormats.of(parsed.getString(VALUE_FORMAT), parsed.getString(VALUE_FORMATS));
    }

    public boolean schemaEvolution() {
        return parsed.getBoolean(SCHEMA_EVOLUTION);
    }

    public boolean keylessAccepted() {
        return "accept".equals(parsed.getString(KEYLESS_RECORDS));
    }

    public long dlqLogIntervalMs() {
        return parsed.getLong(DLQ_LOG_INTERVAL_MS);
    }

    public long maxPayloadBytes() {
        return parsed.getLong(MAX_PAYLOAD_BYTES);
    }

    /** The sealed-lag group's id, or empty when disabled. */
    public String sealedLagGroup() {
        String configured = parsed.getString(SEALED_LAG_GROUP).trim();
        return configured.equals(SEALED_LAG_GROUP_DEFAULT) ? parsed.getString(APPLICATION_ID) + "-sealed" : configured;
    }

    public long registryWaitMs() {
        return parsed.getLong(REGISTRY_WAIT_MS);
    }

    /** The age of unsealed records past which /health reports a partition as stuck. */
    public long healthStuckAfterMs() {
        long configured = parsed.getLong(HEALTH_STUCK_AFTER_MS);
        return configured > 0 ? configured : Math.multiplyExact(3, sealMaxAgeMs());
    }
}
