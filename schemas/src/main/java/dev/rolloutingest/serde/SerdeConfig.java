package dev.rolloutingest.serde;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.BOOLEAN;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.PASSWORD;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The serde's settings, under Confluent's own key names so that a producer or consumer configured for
 * Confluent's serializers works unchanged. Every bad value fails here, naming the key.
 */
public record SerdeConfig(
        List<URI> registryUrls,
        boolean autoRegisterSchemas,
        boolean useLatestVersion,
        boolean specificAvroReader,
        String basicAuthUserInfo,
        Duration requestTimeout,
        int maxRetries,
        Duration retryBackoff,
        int cacheCapacity) {

    public static final String SCHEMA_REGISTRY_URL = "schema.registry.url";
    public static final String AUTO_REGISTER_SCHEMAS = "auto.register.schemas";
    public static final String USE_LATEST_VERSION = "use.latest.version";
    public static final String SPECIFIC_AVRO_READER = "specific.avro.reader";
    public static final String BASIC_AUTH_CREDENTIALS_SOURCE = "basic.auth.credentials.source";
    public static final String BASIC_AUTH_USER_INFO = "basic.auth.user.info";
    public static final String KEY_SUBJECT_NAME_STRATEGY = "key.subject.name.strategy";
    public static final String VALUE_SUBJECT_NAME_STRATEGY = "value.subject.name.strategy";
    public static final String REQUEST_TIMEOUT_MS = "schema.registry.request.timeout.ms";
    public static final String MAX_RETRIES = "schema.registry.max.retries";
    public static final String RETRY_BACKOFF_MS = "schema.registry.retry.backoff.ms";
    public static final String CACHE_CAPACITY = "schema.registry.cache.capacity";

    private static final String TOPIC_NAME_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy";

    /**
     * The registry client's settings, declared once: the apps take them into their configs (env vars, the README's
     * table), and {@link #from} takes its defaults from here.
     */
    public static ConfigDef define(ConfigDef def) {
        return def.define(
                        SCHEMA_REGISTRY_URL,
                        STRING,
                        ConfigDef.NO_DEFAULT_VALUE,
                        new ConfigDef.NonEmptyString(),
                        HIGH,
                        "Confluent-compatible schema registry base URL (Apicurio: http://host:port/apis/ccompat/v7);"
                                + " comma-separated for several, tried in turn")
                .define(
                        BASIC_AUTH_CREDENTIALS_SOURCE,
                        STRING,
                        "USER_INFO",
                        ConfigDef.ValidString.in("USER_INFO"),
                        LOW,
                        "Where the registry's basic-auth credentials come from (only USER_INFO)")
                .define(
                        BASIC_AUTH_USER_INFO,
                        PASSWORD,
                        null,
                        MEDIUM,
                        "user:password for the registry's basic auth (empty = none)")
                .define(
                        AUTO_REGISTER_SCHEMAS,
                        BOOLEAN,
                        true,
                        LOW,
                        "Serializers (the produce command, DLQ and events) register their schema when the registry lacks it")
                .define(
                        USE_LATEST_VERSION,
                        BOOLEAN,
                        false,
                        LOW,
                        "Serializers use the subject's latest registered schema instead of their own")
                .define(
                        SPECIFIC_AVRO_READER,
                        BOOLEAN,
                        false,
                        LOW,
                        "Kept for Confluent compatibility; this project's deserializers always read into its classes")
                .define(
                        KEY_SUBJECT_NAME_STRATEGY,
                        STRING,
                        TOPIC_NAME_STRATEGY,
                        LOW,
                        "Subject of a key schema: only TopicNameStrategy (<topic>-key)")
                .define(
                        VALUE_SUBJECT_NAME_STRATEGY,
                        STRING,
                        TOPIC_NAME_STRATEGY,
                        LOW,
                        "Subject of a value schema: only TopicNameStrategy (<topic>-value)")
                .define(
                        REQUEST_TIMEOUT_MS,
                        INT,
                        10_000,
                        ConfigDef.Range.atLeast(1),
                        LOW,
                        "Timeout of one request to the registry")
                .define(
                        MAX_RETRIES,
                        INT,
                        5,
                        ConfigDef.Range.atLeast(0),
                        LOW,
                        "Retries of a failed registry request (then the record waits, never dead-lettered)")
                .define(
                        RETRY_BACKOFF_MS,
                        INT,
                        200,
                        ConfigDef.Range.atLeast(1),
                        LOW,
                        "First backoff between registry retries (doubled per retry)")
                .define(CACHE_CAPACITY, INT, 1000, ConfigDef.Range.atLeast(1), LOW, "Schemas the client keeps by id");
    }

    private static final Map<String, Object> DEFAULTS = defaults();

    private static Map<String, Object> defaults() {
        Map<String, Object> defaults = new java.util.HashMap<>();
        define(new ConfigDef()).configKeys().values().forEach(key -> {
            if (key.hasDefault() && key.defaultValue != null) {
                defaults.put(key.name, key.defaultValue);
            }
        });
        return Map.copyOf(defaults);
    }

    /** The keys {@link #define} declares. */
    public static java.util.Set<String> keys() {
        return define(new ConfigDef()).names();
    }

    public static SerdeConfig from(Map<String, ?> given) {
        Map<String, Object> props = new java.util.HashMap<>(DEFAULTS);
        given.forEach((k, v) -> {
            if (v != null) {
                props.put(k, v instanceof org.apache.kafka.common.config.types.Password p ? p.value() : v);
            }
        });
        Object url = props.get(SCHEMA_REGISTRY_URL);
        if (url == null || url.toString().isBlank()) {
            throw new ConfigException(
                    SCHEMA_REGISTRY_URL,
                    url,
                    "required: the registry's base URL, e.g. http://localhost:8081 "
                            + "(Apicurio: http://host:port/apis/ccompat/v7); comma-separated for several");
        }
        List<URI> urls = new ArrayList<>();
        for (String part : url.toString().split(",")) {
            String trimmed = part.trim();
            try {
                URI uri = URI.create(trimmed.endsWith("/") ? trimmed.substring(0, trimmed.length() - 1) : trimmed);
                if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme())) {
                    throw new IllegalArgumentException("scheme must be http or https");
                }
                urls.add(uri);
            } catch (IllegalArgumentException e) {
                throw new ConfigException(SCHEMA_REGISTRY_URL, url, "not an http(s) URL: " + e.getMessage());
            }
        }
        for (String strategyKey : List.of(KEY_SUBJECT_NAME_STRATEGY, VALUE_SUBJECT_NAME_STRATEGY)) {
            Object strategy = props.get(strategyKey);
            if (strategy != null
                    && !strategy.toString().equals(TOPIC_NAME_STRATEGY)
                    && !strategy.toString().equals("TopicNameStrategy")) {
                throw new ConfigException(
                        strategyKey, strategy, "only TopicNameStrategy (<topic>-key / <topic>-value) is supported");
            }
        }
        Object source = props.get(BASIC_AUTH_CREDENTIALS_SOURCE);
        if (source != null && !"USER_INFO".equals(source.toString())) {
            throw new ConfigException(BASIC_AUTH_CREDENTIALS_SOURCE, source, "only USER_INFO is supported");
        }
        String userInfo = props.get(BASIC_AUTH_USER_INFO) == null
                ? null
                : props.get(BASIC_AUTH_USER_INFO).toString();
        if (userInfo != null && !userInfo.isEmpty() && !userInfo.contains(":")) {
            throw new ConfigException(BASIC_AUTH_USER_INFO, "(hidden)", "expected the form user:password");
        }
        return new SerdeConfig(
                List.copyOf(urls),
                bool(props, AUTO_REGISTER_SCHEMAS),
                bool(props, USE_LATEST_VERSION),
                bool(props, SPECIFIC_AVRO_READER),
                userInfo == null || userInfo.isEmpty() ? null : userInfo,
                Duration.ofMillis(positiveLong(props, REQUEST_TIMEOUT_MS, 1)),
                (int) positiveLong(props, MAX_RETRIES, 0),
                Duration.ofMillis(positiveLong(props, RETRY_BACKOFF_MS, 1)),
                (int) positiveLong(props, CACHE_CAPACITY, 1));
    }

    private static boolean bool(Map<String, ?> props, String key) {
        Object value = props.get(key);
        if (value instanceof Boolean b) {
            return b;
        }
        String text = value.toString().trim().toLowerCase();
        if (text.equals("true") || text.equals("false")) {
            return Boolean.parseBoolean(text);
        }
        throw new ConfigException(key, value, "expected true or false");
    }

    private static long positiveLong(Map<String, ?> props, String key, long min) {
        Object value = props.get(key);
        try {
            long parsed = value instanceof Number n
                    ? n.longValue()
                    : Long.parseLong(value.toString().trim());
            if (parsed < min || parsed > Integer.MAX_VALUE) {
                throw new ConfigException(
                        key, value, "expected a whole number from " + min + " to " + Integer.MAX_VALUE);
            }
            return parsed;
        } catch (NumberFormatException e) {
            throw new ConfigException(key, value, "expected a whole number");
        }
    }
}
