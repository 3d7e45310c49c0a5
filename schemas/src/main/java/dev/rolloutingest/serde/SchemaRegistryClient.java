package dev.rolloutingest.serde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.rolloutingest.retry.Retry;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client of the Confluent Schema Registry REST API (also served by Apicurio under
 * {@code /apis/ccompat/v7}). Caches are bounded by {@link SerdeConfig#cacheCapacity()}; calls retry
 * connection failures and 5xx answers with exponential backoff, then fail with a typed error.
 *
 * <p>Over 300 lines because each REST call (by id, typed by id, by subject, latest, registration, compatibility) carries its own
 * answer parsing and error mapping; the retry is {@code Retry}'s.
 */
public final class SchemaRegistryClient {
    private static final Logger log = LoggerFactory.getLogger(SchemaRegistryClient.class);
    private static final ObjectMapper json = new ObjectMapper();
    private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

    /** A schema as registered under a subject. */
    public record RegisteredSchema(int id, int version, Schema schema) {}

    /** A schema of any type by its id: AVRO, JSON or PROTOBUF, with its text. */
    public record TypedSchema(String type, String text) {}

    private final SerdeConfig config;
    private final HttpClient http;
    private final String authorization;
    private final Map<Integer, Schema> schemaById;
    private final Map<String, Integer> idBySubjectAndSchema;
    private final Map<Integer, TypedSchema> typedById;

    public SchemaRegistryClient(SerdeConfig config) {
        this.config = config;
        this.http =
                HttpClient.newBuilder().connectTimeout(config.requestTimeout()).build();
        this.authorization = config.basicAuthUserInfo() == null
                ? null
                : "Basic "
                        + Base64.getEncoder()
                                .encodeToString(config.basicAuthUserInfo().getBytes(StandardCharsets.UTF_8));
        this.schemaById = lru(config.cacheCapacity());
        this.idBySubjectAndSchema = lru(config.cacheCapacity());
        this.typedById = lru(config.cacheCapacity());
    }

    /** Registers (idempotently) and returns the global schema id. HTTP 409 means incompatible. */
    public int register(String subject, Schema schema) {
        String cacheKey = subject + "\u0000" + schema;
        Integer cached = idBySubjectAndSchema.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        JsonNode answer;
        try {
            answer = call(
                    "POST",
                    "/subjects/" + encode(subject) + "/versions",
                    schemaBody(schema),
                    "registering a schema under subject '" + subject + "'");
        } catch (SerdeException.IncompatibleSchema conflict) {
            // Two clients registering a new subject at once: Apicurio answers the loser 409 although the same
            // schema is now there. If a lookup finds it, that is the answer; if not, it really is incompatible.
            try {
                return lookup(subject, schema);
            } catch (SerdeException notThere) {
                throw conflict;
            }
        }
        int id = answer.path("id").asInt(-1);
        if (id < 0) {
            throw new SerdeException.RegistryError(
                    200, 0, "Registry answered without an id for subject '" + subject + "'");
        }
        idBySubjectAndSchema.put(cacheKey, id);
        schemaById.putIfAbsent(id, schema);
        return id;
    }

    /** Finds the id of an already registered schema; fails when the subject lacks it. */
    public int lookup(String subject, Schema schema) {
        String cacheKey = subject + "\u0000" + schema;
        Integer cached = idBySubjectAndSchema.get(cacheKey);
        if (cached != null) {
            return cached;
        }
        JsonNode answer = call(
                "POST",
                "/subjects/" + encode(subject),
                schemaBody(schema),
                "looking up a schema under subject '" + subject + "'");
        int id = answer.path("id").asInt();
        idBySubjectAndSchema.put(cacheKey, id);
        schemaById.putIfAbsent(id, schema);
        return id;
    }

    public Schema byId(int id) {
        Schema cached = schemaById.get(id);
        if (cached != null) {
            return cached;
        }
        TypedSchema typed = typedById(id);
        if (!typed.type().equals(SchemaTypes.AVRO)) {
            throw new SerdeException(
                    "wrong-format", "Schema id " + id + " is a " + typed.type() + " schema, not Avro", null);
        }
        Schema schema = parse(typed.text(), "schema id " + id);
        schemaById.put(id, schema);
        return schema;
    }

    /**
     * The schema of an id whatever its type. An answer without schemaType (Confluent's for Avro, Apicurio's for any
     * schema registered under a subject that held Avro) has the type its text shows ({@link SchemaTypes}).
     */
    public TypedSchema typedById(int id) {
        TypedSchema cached = typedById.get(id);
        if (cached != null) {
            return cached;
        }
        JsonNode answer;
        try {
            answer = call("GET", "/schemas/ids/" + id, null, "fetching schema id " + id);
        } catch (SerdeException.RegistryError e) {
            if (e.httpStatus() == 404) {
                throw new SerdeException.UnknownSchemaId(
                        id,
                        "Schema id " + id + " is not known to the registry at " + config.registryUrls() + " ("
                                + e.getMessage() + ")");
            }
            throw e;
        }
        String text = answer.path("schema").asText();
        JsonNode type = answer.path("schemaType");
        TypedSchema schema = new TypedSchema(
                type.isTextual() && !type.asText().isBlank()
                        ? type.asText().toUpperCase(java.util.Locale.ROOT)
                        : SchemaTypes.of(text),
                text);
        typedById.put(id, schema);
        return schema;
    }

    public RegisteredSchema latest(String subject) {
        JsonNode answer = call(
                "GET",
                "/subjects/" + encode(subject) + "/versions/latest",
                null,
                "fetching the latest schema of subject '" + subject + "'");
        int id = answer.path("id").asInt();
        Schema schema = parse(answer.path("schema").asText(), "subject '" + subject + "'");
        schemaById.putIfAbsent(id, schema);
        return new RegisteredSchema(id, answer.path("version").asInt(), schema);
    }

    /**
     * Fails with {@link SerdeException.RegistryUnavailable} (after the configured retries with backoff)
     * when the registry does not answer: apps call this at start so a wrong URL is an error, not a hang.
     */
    public void checkReachable() {
        call("GET", "/subjects", null, "checking that the registry answers");
    }

    /** Sets the subject's compatibility level (BACKWARD, FORWARD, FULL, NONE, ...). */
    public void setCompatibility(String subject, String level) {
        ObjectNode body = json.createObjectNode().put("compatibility", level);
        call("PUT", "/config/" + encode(subject), body.toString(), "setting compatibility of '" + subject + "'");
    }

    private JsonNode call(String method, String path, String body, String what) {
        Retry.Policy policy = new Retry.Policy(config.maxRetries() + 1, config.retryBackoff(), Duration.ofSeconds(10));
        try {
            return Retry.run(
                    policy,
                    // Down, or refusing for now (401/403/408/429): worth another attempt; the record's fault is not.
                    e -> e instanceof SerdeException failure && !failure.recordsFault(),
                    (attempt, e, backoff) -> log.debug(
                            "Registry call failed ({}), retrying in {} ms", e.getMessage(), backoff.toMillis()),
                    // Several URLs are tried in turn, like Confluent's client does for a registry cluster.
                    attempt -> once(
                            config.registryUrls()
                                    .get((attempt - 1) % config.registryUrls().size()),
                            method,
                            path,
                            body,
                            what));
        } catch (Retry.Exhausted e) {
            if (!(e.last() instanceof SerdeException last)) {
                throw e.last() instanceof RuntimeException r ? r : new IllegalStateException(e.last());
            }
            if (last.recordsFault() || last instanceof SerdeException.RegistryError) {
                throw last;
            }
            throw new SerdeException.RegistryUnavailable(
                    "Schema registry at " + config.registryUrls()
                            + " unavailable after " + e.attempts() + " attempts while " + what + ": "
                            + last.getMessage(),
                    last.getCause());
        } catch (InterruptedException e) {
            throw new SerdeException.RegistryUnavailable("interrupted during retry backoff", e);
        }
    }

    private JsonNode once(URI base, String method, String path, String body, String what) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path))
                .timeout(config.requestTimeout())
                .header("Accept", CONTENT_TYPE + ", application/json");
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        if (body != null) {
            request.header("Content-Type", CONTENT_TYPE);
            request.method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> response;
        try {
            response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new SerdeException.RegistryUnavailable(base + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SerdeException.RegistryUnavailable("interrupted while " + what, e);
        }
        int status = response.statusCode();
        JsonNode answer = readJson(response.body());
        if (status >= 200 && status < 300) {
            return answer;
        }
        int errorCode = answer.path("error_code").asInt(status);
        String message = answer.path("message").asText(response.body());
        if (status >= 500) {
            throw new SerdeException.RegistryUnavailable(base + " answered HTTP " + status + ": " + message, null);
        }
        if (status == 409) {
            throw new SerdeException.IncompatibleSchema(
                    "Registry rejected the schema as incompatible while " + what + " (HTTP 409, error_code " + errorCode
                            + "): " + message,
                    null);
        }
        throw new SerdeException.RegistryError(
                status,
                errorCode,
                "Registry answered HTTP " + status + " (error_code " + errorCode + ") while " + what + ": " + message);
    }

    private static JsonNode readJson(String body) {
        if (body == null || body.isBlank()) {
            return json.createObjectNode();
        }
        try {
            return json.readTree(body);
        } catch (IOException e) {
            return json.createObjectNode().put("message", body);
        }
    }

    private static String schemaBody(Schema schema) {
        return json.createObjectNode()
                .put("schema", schema.toString())
                .put("schemaType", "AVRO")
                .toString();
    }

    private static Schema parse(String text, String what) {
        try {
            return new Schema.Parser().parse(text);
        } catch (RuntimeException e) {
            throw new SerdeException.RegistryError(
                    200, 0, "Registry returned an unparseable Avro schema for " + what + ": " + e.getMessage());
        }
    }

    private static String encode(String subject) {
        return URLEncoder.encode(subject, StandardCharsets.UTF_8);
    }

    private static <K, V> Map<K, V> lru(int capacity) {
        return Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > capacity;
            }
        });
    }
}
