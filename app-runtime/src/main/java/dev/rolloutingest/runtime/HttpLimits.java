package dev.rolloutingest.runtime;

import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;

import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;

/**
 * How much of the HTTP endpoint data may hold: the threads that serve reads and admin calls (never /health or
 * /metrics, which have their own), and how long an answer may wait on a client that stopped reading before its
 * connection is dropped and its thread freed.
 *
 * @param dataThreads threads serving the routes that read or change data; more requests than that wait in a queue
 *     of the same length, and past it are answered 503 at once
 * @param stallTimeoutMs how long one write of an answer may block on its client before the connection is dropped
 */
public record HttpLimits(int dataThreads, long stallTimeoutMs) {
    public static final String DATA_THREADS = "http.data.threads";
    public static final String STALL_TIMEOUT_MS = "http.stall.timeout.ms";

    /** The defaults: 8 data threads, 30 s. */
    public static final HttpLimits DEFAULTS = new HttpLimits(8, 30_000);

    public HttpLimits {
        if (dataThreads < 1) {
            throw new IllegalArgumentException(DATA_THREADS + " must be at least 1, was " + dataThreads);
        }
        if (stallTimeoutMs < 1) {
            throw new IllegalArgumentException(STALL_TIMEOUT_MS + " must be at least 1, was " + stallTimeoutMs);
        }
    }

    /** Adds the limits' keys to an app's settings. */
    public static ConfigDef define(ConfigDef def) {
        return def.define(
                        DATA_THREADS,
                        INT,
                        DEFAULTS.dataThreads,
                        ConfigDef.Range.between(1, 1024),
                        MEDIUM,
                        "Threads serving the HTTP routes that read or change data (reads, Arrow streams, admin); as many"
                                + " more requests wait, the rest get 503 at once. /health and /metrics have threads of"
                                + " their own, so a probe never waits behind data")
                .define(
                        STALL_TIMEOUT_MS,
                        LONG,
                        DEFAULTS.stallTimeoutMs,
                        ConfigDef.Range.between(1, Long.MAX_VALUE),
                        MEDIUM,
                        "How long one write of an HTTP answer may wait on a client that stopped reading: past it the"
                                + " connection is dropped and its thread freed (the client sees a broken stream)");
    }

    public static HttpLimits from(AbstractConfig config) {
        return new HttpLimits(config.getInt(DATA_THREADS), config.getLong(STALL_TIMEOUT_MS));
    }

    /** The limits set by the env vars of these keys ({@code HTTP_DATA_THREADS} ...): for the CLI's serve. */
    public static HttpLimits fromEnv(Map<String, String> env) {
        ConfigDef def = define(new ConfigDef());
        return from(new AbstractConfig(def, ConfigSources.resolve(def, new java.util.Properties(), env), false));
    }
}
