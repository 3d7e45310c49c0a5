package dev.rolloutingest.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.streams.StreamsConfig;

/**
 * Where settings come from, in order of precedence: environment variables, a properties file, the
 * defaults declared in the app's {@link ConfigDef}. Every key has one env var: the key upper-cased with
 * dots as underscores ({@code rollout.merge.max.generations} is {@code ROLLOUT_MERGE_MAX_GENERATIONS}).
 *
 * <p>Two open families pass through without declaration: {@code streams.*} (any Kafka Streams or client
 * setting, prefix removed) and {@code rollout.table.storage.*} (Lance storage options such as
 * {@code aws_endpoint}; env {@code ROLLOUT_TABLE_STORAGE_AWS_ENDPOINT}). The first is also read from
 * {@code STREAMS_*} env vars ({@code STREAMS_SECURITY_PROTOCOL}).
 */
public final class ConfigSources {
    public static final String STREAMS_PREFIX = "streams.";
    public static final String STORAGE_PREFIX = "rollout.table.storage.";
    private static final String STORAGE_ENV_PREFIX = "ROLLOUT_TABLE_STORAGE_";
    private static final String STREAMS_ENV_PREFIX = "STREAMS_";
    /** segment.ms of the changelog topics Streams creates (streams.topic.segment.ms overrides it). */
    static final String CHANGELOG_SEGMENT_MS = "3600000";

    private ConfigSources() {}

    public static String envName(String key) {
        return key.toUpperCase(Locale.ROOT).replace('.', '_').replace('-', '_');
    }

    /** Reads a properties file; a missing or unreadable file fails naming it. */
    public static Properties file(Path path) {
        Properties props = new Properties();
        if (path == null) {
            return props;
        }
        if (!Files.isRegularFile(path)) {
            throw new ConfigException("config file " + path + " does not exist");
        }
        try (InputStream in = Files.newInputStream(path)) {
            props.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read config file " + path, e);
        }
        return props;
    }

    /** The raw key/value map for {@code def}: env over file over nothing (defaults are the ConfigDef's). */
    public static Map<String, Object> resolve(ConfigDef def, Properties file, Map<String, String> env) {
        Map<String, Object> values = new HashMap<>();
        for (String name : file.stringPropertyNames()) {
            values.put(name, file.getProperty(name).trim());
        }
        for (String key : def.names()) {
            String fromEnv = env.get(envName(key));
            if (fromEnv != null) {
                values.put(key, fromEnv.trim());
            }
        }
        storageOptionsFromEnv(env).forEach((option, value) -> values.put(STORAGE_PREFIX + option, value));
        streamsSettingsFromEnv(env).forEach((setting, value) -> values.put(STREAMS_PREFIX + setting, value));
        return values;
    }

    /**
     * Kafka client settings given as {@code STREAMS_<SETTING>} env vars ({@code STREAMS_SASL_JAAS_CONFIG} is
     * {@code streams.sasl.jaas.config}): Kafka's own keys are lower case with dots, so the mapping is exact.
     */
    public static Map<String, String> streamsSettingsFromEnv(Map<String, String> env) {
        Map<String, String> settings = new HashMap<>();
        for (Map.Entry<String, String> e : env.entrySet()) {
            if (e.getKey().startsWith(STREAMS_ENV_PREFIX) && e.getKey().length() > STREAMS_ENV_PREFIX.length()) {
                settings.put(
                        e.getKey()
                                .substring(STREAMS_ENV_PREFIX.length())
                                .toLowerCase(Locale.ROOT)
                                .replace('_', '.'),
                        e.getValue().trim());
            }
        }
        return settings;
    }

    /** Lance storage options given as {@code ROLLOUT_TABLE_STORAGE_<OPTION>} env vars, option names lower-cased. */
    public static Map<String, String> storageOptionsFromEnv(Map<String, String> env) {
        Map<String, String> options = new HashMap<>();
        for (Map.Entry<String, String> e : env.entrySet()) {
            if (e.getKey().startsWith(STORAGE_ENV_PREFIX)) {
                options.put(e.getKey().substring(STORAGE_ENV_PREFIX.length()).toLowerCase(Locale.ROOT), e.getValue());
            }
        }
        return options;
    }

    /** Entries under a prefix, with the prefix removed. */
    public static Map<String, String> withPrefix(Map<String, ?> values, String prefix) {
        Map<String, String> out = new HashMap<>();
        for (Map.Entry<String, ?> e : values.entrySet()) {
            if (e.getKey().startsWith(prefix) && e.getValue() != null) {
                out.put(e.getKey().substring(prefix.length()), e.getValue().toString());
            }
        }
        return out;
    }

    /**
     * Every Kafka client this project creates besides Streams' own (admin clients, the recovery reader, lag
     * publishers) connects the way Streams does: the brokers plus the {@code streams.*} security settings
     * ({@code security.protocol}, {@code sasl.*}, {@code ssl.*}), so a SASL/SSL cluster works for all of them.
     */
    public static Map<String, Object> clientConfig(String bootstrapServers, Map<String, ?> values) {
        Map<String, Object> client = new HashMap<>();
        client.put("bootstrap.servers", bootstrapServers);
        withPrefix(values, STREAMS_PREFIX).forEach((k, v) -> {
            if (k.startsWith("security.") || k.startsWith("sasl.") || k.startsWith("ssl.")) {
                client.put(k, v);
            }
        });
        return client;
    }

    private static final java.util.Set<String> SERDE_KEYS = dev.rolloutingest.serde.SerdeConfig.keys();

    /** The schema-registry settings among {@code values}, under Confluent's names, for the serde. */
    public static Map<String, Object> serdeSettings(Map<String, Object> values) {
        Map<String, Object> serde = new HashMap<>();
        values.forEach((k, v) -> {
            if (SERDE_KEYS.contains(k) || k.startsWith("schema.registry.") || k.startsWith("basic.auth.")) {
                serde.put(k, v);
            }
        });
        return serde;
    }

    /**
     * Streams settings both apps share: exactly_once_v2 (input offsets, state stores and output events
     * commit together, and only committed input is read), earliest reset (a reset never silently skips
     * data), static membership with the instance id and a session timeout (a restarted instance takes its
     * partitions back without a rebalance; a dead one's go to the others after the timeout), the commit
     * interval, no task idling (one input partition per task), then any {@code streams.*} override.
     */
    public static Properties streamsProperties(AbstractConfig config, Map<String, Object> values) {
        String applicationId = config.getString(CommonKeys.APPLICATION_ID);
        String stateDir = config.getString(CommonKeys.STATE_DIR);
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, config.getString(CommonKeys.BOOTSTRAP_SERVERS));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, config.getLong(CommonKeys.COMMIT_INTERVAL_MS));
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        // Every task of both topologies reads one partition of one topic, so there is nothing to align by
        // timestamp across partitions. Idling enabled (0), Streams 4.4 formats a lag message per empty
        // partition per processing loop: ~7 % of the ingest stream thread, gone with idling disabled.
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, StreamsConfig.MAX_TASK_IDLE_MS_DISABLED);
        // Streams appends the stream thread's index to it, so each thread is its own static member.
        props.put(
                StreamsConfig.mainConsumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG),
                applicationId + "-" + instanceId(config.getString(CommonKeys.INSTANCE_ID), Path.of(stateDir)));
        int session = config.getInt(CommonKeys.SESSION_TIMEOUT_MS);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), session);
        props.put(
                StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), Math.max(500, session / 5));
        // A restart after a kill restores the stores from their changelogs, which are compacted, but only in closed
        // segments: at Kafka's default (a segment closes after 7 days) a week of every seal's or merge's position
        // would be read back at every kill. An hour's segments keep the restore to about an hour of writes.
        props.put(StreamsConfig.topicPrefix(TopicConfig.SEGMENT_MS_CONFIG), CHANGELOG_SEGMENT_MS);
        // There is no global store; this only keeps Streams from warning about it at every start. The
        // partition assignor builds its own StreamsConfig from the main consumer's settings: it needs it too.
        props.put("processing.exception.handler.global.enabled", "true");
        props.put(StreamsConfig.mainConsumerPrefix("processing.exception.handler.global.enabled"), "true");
        props.putAll(withPrefix(values, STREAMS_PREFIX));
        return props;
    }

    /**
     * The configured instance id, or one kept in the state directory (created on first start): stable
     * across restarts of this instance, different for every other state directory.
     */
    static String instanceId(String configured, Path stateDir) {
        if (configured != null && !configured.isBlank()) {
            return configured.trim();
        }
        Path file = stateDir.resolve("rollout-instance-id");
        try {
            if (Files.isRegularFile(file)) {
                String kept = Files.readString(file).trim();
                if (!kept.isEmpty()) {
                    return kept;
                }
            }
            Files.createDirectories(stateDir);
            String created = UUID.randomUUID().toString().substring(0, 8);
            Files.writeString(file, created);
            return created;
        } catch (IOException e) {
            throw new ConfigException(
                    CommonKeys.STATE_DIR,
                    stateDir.toString(),
                    "cannot keep the instance id there (" + e.getMessage() + "); set " + CommonKeys.INSTANCE_ID);
        }
    }
}
