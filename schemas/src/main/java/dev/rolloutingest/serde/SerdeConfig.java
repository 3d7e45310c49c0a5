package dev.rolloutingest.serde;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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

    public static SerdeConfig from(Map<String, ?> props) {
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
                bool(props, AUTO_REGISTER_SCHEMAS, true),
                bool(props, USE_LATEST_VERSION, false),
                bool(props, SPECIFIC_AVRO_READER, false),
                userInfo == null || userInfo.isEmpty() ? null : userInfo,
                Duration.ofMillis(positiveLong(props, REQUEST_TIMEOUT_MS, 10_000, 1)),
                (int) positiveLong(props, MAX_RETRIES, 5, 0),
                Duration.ofMillis(positiveLong(props, RETRY_BACKOFF_MS, 200, 1)),
                (int) positiveLong(props, CACHE_CAPACITY, 1000, 1));
    }

    private static boolean bool(Map<String, ?> props, String key, boolean fallback) {
        Object value = props.get(key);
        if (value == null) {
            return fallback;
        }
        if (value instanceof Boolean b) {
            return b;
        }
        String text = value.toString().trim().toLowerCase();
        if (text.equals("true") || text.equals("false")) {
            return Boolean.parseBoolean(text);
        }
        throw new ConfigException(key, value, "expected true or false");
    }

    private static long positiveLong(Map<String, ?> props, String key, long fallback, long min) {
        Object value = props.get(key);
        if (value == null) {
            return fallback;
        }
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
