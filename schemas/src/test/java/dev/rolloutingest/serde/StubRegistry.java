package dev.rolloutingest.serde;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A registry answering {@code GET /schemas/ids/{id}} from a map, on loopback, for unit tests that need a registry's
 * answers but not a real one: each schema with or without {@code schemaType}, as Apicurio may answer. Counts the
 * fetches it serves.
 */
public final class StubRegistry implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    static {
        // without it an answer's headers and body wait on the client's delayed ack: 40 ms a request
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    private record Entry(String type, String text) {}

    private final HttpServer server;
    private final Map<Integer, Entry> schemas = new ConcurrentHashMap<>();
    private final AtomicInteger fetches = new AtomicInteger();

    public StubRegistry() {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.createContext("/schemas/ids/", this::answer);
        server.start();
    }

    /** Serves {@code text} as schema {@code id}; {@code type} null leaves schemaType out of the answer. */
    public StubRegistry schema(int id, String type, String text) {
        schemas.put(id, new Entry(type, text));
        return this;
    }

    public String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** A client of this registry keeping {@code cacheCapacity} schemas, no retries. */
    public SchemaRegistryClient client(int cacheCapacity) {
        return new SchemaRegistryClient(SerdeConfig.from(Map.of(
                "schema.registry.url", url(),
                "schema.registry.max.retries", "0",
                "schema.registry.cache.capacity", Integer.toString(cacheCapacity))));
    }

    public int fetches() {
        return fetches.get();
    }

    private void answer(HttpExchange exchange) throws IOException {
        fetches.incrementAndGet();
        String path = exchange.getRequestURI().getPath();
        Entry entry = null;
        try {
            entry = schemas.get(Integer.parseInt(path.substring(path.lastIndexOf('/') + 1)));
        } catch (NumberFormatException notAnId) {
            // answered as unknown below
        }
        ObjectNode body = JSON.createObjectNode();
        int status;
        if (entry == null) {
            status = 404;
            body.put("error_code", 40403).put("message", "Schema not found");
        } else {
            status = 200;
            body.put("schema", entry.text());
            if (entry.type() != null) {
                body.put("schemaType", entry.type());
            }
        }
        byte[] bytes = body.toString().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/vnd.schemaregistry.v1+json");
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
