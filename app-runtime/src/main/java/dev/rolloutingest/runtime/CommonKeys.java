package dev.rolloutingest.runtime;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.table.TableSettings;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;

/** The settings every app has (brokers, registry, table, identity, state, HTTP), each with the app's defaults. */
public final class CommonKeys {
    public static final String BOOTSTRAP_SERVERS = "bootstrap.servers";
    public static final String SCHEMA_REGISTRY_URL = SerdeConfig.SCHEMA_REGISTRY_URL;
    public static final String TABLE_URI = "rollout.table.uri";
    public static final String TABLES_ROOT = "rollout.tables.root";
    public static final String TABLES_MAX = "rollout.tables.max";
    public static final String METRICS_TABLES_MAX = "rollout.metrics.tables.max";
    public static final String GENERATIONS_TOPIC = "rollout.generations.topic";
    public static final String APPLICATION_ID = "application.id";
    public static final String STATE_DIR = "rollout.state.dir";
    public static final String HTTP_HOST = "http.host";
    public static final String HTTP_PORT = "http.port";
    public static final String PENDING_WARN_GENERATIONS = TableSettings.PENDING_WARN_GENERATIONS;
    public static final String PENDING_MAX_GENERATIONS = TableSettings.PENDING_MAX_GENERATIONS;
    public static final String READ_REFRESH_MS = TableSettings.READ_REFRESH_MS;
    public static final String READ_CACHE_BYTES = TableSettings.READ_CACHE_BYTES;
    public static final String READ_OPEN_GENERATIONS = TableSettings.READ_OPEN_GENERATIONS;
    public static final String INSTANCE_ID = "rollout.instance.id";
    public static final String SESSION_TIMEOUT_MS = "rollout.session.timeout.ms";
    public static final String COMMIT_INTERVAL_MS = "rollout.commit.interval.ms";
    public static final String LAG_PUBLISH_INTERVAL_MS = "rollout.lag.publish.interval.ms";
    public static final String HEALTH_MAX_THREAD_REPLACEMENTS = "rollout.health.max.thread.replacements";
    public static final String HEALTH_THREAD_REPLACEMENT_WINDOW_MS = "rollout.health.thread.replacement.window.ms";

    private CommonKeys() {}

    /** The table's read and merge limits from a parsed config holding their keys (declared by {@link TableSettings}). */
    public static TableSettings tableSettings(AbstractConfig config) {
        return TableSettings.from(config.values());
    }

    /** A ConfigDef holding the common keys; the app adds its own to it. */
    public static ConfigDef define(
            String defaultApplicationId, String defaultStateDir, int defaultHttpPort, String httpRoutes) {
        return TableSettings.defineReads(SerdeConfig.define(HttpLimits.define(HttpAccess.define(new ConfigDef()))))
                .define(
                        BOOTSTRAP_SERVERS,
                        STRING,
                        ConfigDef.NO_DEFAULT_VALUE,
                        new ConfigDef.NonEmptyString(),
                        HIGH,
                        "Kafka brokers, host:port[,host:port]")
                .define(
                        GENERATIONS_TOPIC,
                        STRING,
                        "rollout-generations",
                        new ConfigDef.NonEmptyString(),
                        MEDIUM,
                        "Topic of GenerationSealed events (the ingest app's output, the merge-worker's input), key ="
                                + " shard id (table/shard id with rollout.tables.root: merge-worker instances share tables"
                                + " out, up to the topic's partitions)")
                .define(
                        TABLE_URI,
                        STRING,
                        "",
                        null,
                        HIGH,
                        "Lance table of a one-table deployment: a local path, s3://bucket/prefix, az://container/prefix or"
                                + " abfss://container@account.dfs.core.windows.net/prefix; storage options as"
                                + " rollout.table.storage.<option>. Set this or " + TABLES_ROOT)
                .define(
                        TABLES_ROOT,
                        STRING,
                        "",
                        null,
                        HIGH,
                        "Root of a catalog of many tables (a local path, s3://bucket/prefix, az:// or abfss://): table"
                                + " NAME is the Lance dataset at <root>/NAME, created on its first record; records are routed to tables by"
                                + " rollout.table.route. Set this or " + TABLE_URI)
                .define(
                        TABLES_MAX,
                        INT,
                        1000,
                        ConfigDef.Range.between(1, 100_000),
                        MEDIUM,
                        "Most tables under " + TABLES_ROOT + ": a record that would create one more goes to the DLQ"
                                + " (reason table-cap)")
                .define(
                        METRICS_TABLES_MAX,
                        INT,
                        TableSeries.DEFAULT_MAX,
                        ConfigDef.Range.between(0, 10_000),
                        LOW,
                        "Tables whose per-table series (rows ingested, rows merged) carry their own name; the tables"
                                + " after them share the table=_other series")
                .define(
                        APPLICATION_ID,
                        STRING,
                        defaultApplicationId,
                        new ConfigDef.NonEmptyString(),
                        MEDIUM,
                        "Kafka Streams application id (also the consumer group)")
                .define(
                        STATE_DIR,
                        STRING,
                        defaultStateDir,
                        new ConfigDef.NonEmptyString(),
                        LOW,
                        "Kafka Streams state directory")
                .define(
                        HTTP_HOST,
                        STRING,
                        "127.0.0.1",
                        new ConfigDef.NonEmptyString(),
                        LOW,
                        "Address of the HTTP endpoint (" + httpRoutes + ")")
                .define(
                        HTTP_PORT,
                        INT,
                        defaultHttpPort,
                        ConfigDef.Range.between(0, 65535),
                        LOW,
                        "Port of the HTTP endpoint (0 = any free port)")
                .define(
                        INSTANCE_ID,
                        STRING,
                        "",
                        null,
                        MEDIUM,
                        "This instance's stable identity in the consumer group (static membership: a restarted instance"
                                + " takes its partitions back at once, without a rebalance). Empty = an id kept in the"
                                + " state directory, so each state directory is one instance; set it when the state"
                                + " directory does not survive a restart (e.g. the pod name)")
                .define(
                        SESSION_TIMEOUT_MS,
                        INT,
                        15_000,
                        ConfigDef.Range.between(6_000, 300_000),
                        MEDIUM,
                        "How long the group waits for an instance that stopped heartbeating before its partitions go to"
                                + " the others (a crashed instance that does not come back); shorter means faster"
                                + " takeover and more spurious rebalances on long GC pauses")
                .define(
                        COMMIT_INTERVAL_MS,
                        LONG,
                        1_000L,
                        ConfigDef.Range.between(10, 60_000),
                        LOW,
                        "Exactly-once commit interval: input offsets, state and output events commit together this"
                                + " often (each commit is a transaction; the records after the last one are redone after"
                                + " a crash)")
                .define(
                        LAG_PUBLISH_INTERVAL_MS,
                        LONG,
                        1_000L,
                        ConfigDef.Range.between(100, 60_000),
                        LOW,
                        "How often the positions of the lag groups (sealed, merged) are committed when they moved")
                .define(
                        HEALTH_MAX_THREAD_REPLACEMENTS,
                        INT,
                        3,
                        ConfigDef.Range.atLeast(0),
                        LOW,
                        "/health answers 503 when more stream threads than this failed and were replaced within "
                                + HEALTH_THREAD_REPLACEMENT_WINDOW_MS + " (0 = never)")
                .define(
                        HEALTH_THREAD_REPLACEMENT_WINDOW_MS,
                        LONG,
                        600_000L,
                        ConfigDef.Range.atLeast(1),
                        LOW,
                        "The window over which stream-thread replacements are counted for /health");
    }
}
