package dev.rolloutingest.runtime;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import org.apache.kafka.common.config.ConfigDef;

/** The settings every app has (brokers, registry, table, identity, state, HTTP), each with the app's defaults. */
public final class CommonKeys {
    public static final String BOOTSTRAP_SERVERS = "bootstrap.servers";
    public static final String SCHEMA_REGISTRY_URL = "schema.registry.url";
    public static final String TABLE_URI = "rollout.table.uri";
    public static final String APPLICATION_ID = "application.id";
    public static final String STATE_DIR = "rollout.state.dir";
    public static final String HTTP_HOST = "http.host";
    public static final String HTTP_PORT = "http.port";
    public static final String HEALTH_MAX_THREAD_REPLACEMENTS = "rollout.health.max.thread.replacements";
    public static final String HEALTH_THREAD_REPLACEMENT_WINDOW_MS = "rollout.health.thread.replacement.window.ms";

    private CommonKeys() {}

    /** A ConfigDef holding the common keys; the app adds its own to it. */
    public static ConfigDef define(String defaultApplicationId, String defaultStateDir, int defaultHttpPort,
            String httpRoutes) {
        return new ConfigDef()
                .define(BOOTSTRAP_SERVERS, STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), HIGH,
                        "Kafka brokers, host:port[,host:port]")
                .define(SCHEMA_REGISTRY_URL, STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), HIGH,
                        "Confluent-compatible schema registry base URL (Apicurio: http://host:port/apis/ccompat/v7)")
                .define(TABLE_URI, STRING, ConfigDef.NO_DEFAULT_VALUE, new ConfigDef.NonEmptyString(), HIGH,
                        "Lance table: a local path or s3://bucket/prefix; storage options as rollout.table.storage.<option>")
                .define(APPLICATION_ID, STRING, defaultApplicationId, new ConfigDef.NonEmptyString(), MEDIUM,
                        "Kafka Streams application id (also the consumer group)")
                .define(STATE_DIR, STRING, defaultStateDir, new ConfigDef.NonEmptyString(), LOW,
                        "Kafka Streams state directory")
                .define(HTTP_HOST, STRING, "127.0.0.1", new ConfigDef.NonEmptyString(), LOW,
                        "Address of the HTTP endpoint (" + httpRoutes + ")")
                .define(HTTP_PORT, INT, defaultHttpPort, ConfigDef.Range.between(0, 65535), LOW,
                        "Port of the HTTP endpoint (0 = any free port)")
                .define(HEALTH_MAX_THREAD_REPLACEMENTS, INT, 3, ConfigDef.Range.atLeast(0), LOW,
                        "/health answers 503 when more stream threads than this failed and were replaced within "
                                + HEALTH_THREAD_REPLACEMENT_WINDOW_MS + " (0 = never)")
                .define(HEALTH_THREAD_REPLACEMENT_WINDOW_MS, LONG, 600_000L, ConfigDef.Range.atLeast(1), LOW,
                        "The window over which stream-thread replacements are counted for /health");
    }
}
