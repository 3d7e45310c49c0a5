package dev.rolloutingest.runtime;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDK's own HTTP server, for /metrics, /health and the small admin and read APIs: no framework to
 * pull in for a handful of JSON routes, and it starts in milliseconds. Loopback by default.
 *
 * <p>Health first: /health and /metrics run on two control threads of their own, every route that reads or changes
 * data on a bounded pool of data threads ({@link HttpLimits}), and an answer whose client stops reading is dropped
 * after the stall limit ({@link StalledClients}), so neither slow data nor a stalled client keeps a probe waiting.
 */
public final class HttpEndpoint implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(HttpEndpoint.class);
    /**
     * Modules named, not discovered: discovery also picks up the JAXB module some dependencies bring, whose
     * javax.xml.bind classes are not on every classpath (the launcher's is one).
     */
    public static final ObjectMapper JSON = new ObjectMapper().registerModule(new JavaTimeModule());

    /** Writes a streamed answer's body; a failure part way aborts the connection (no clean end the client could trust). */
    @FunctionalInterface
    public interface BodyWriter {
        void write(OutputStream out) throws Exception;

        /** Called instead of {@link #write} when the answer cannot be sent at all: release what it holds. */
        default void abandon() throws Exception {}
    }

    /**
     * A route's answer: a body in memory, or one written while the client reads it ({@code stream}, sent chunked, for
     * answers of any size in bounded memory), with extra headers.
     */
    public record Response(
            int status, String contentType, byte[] body, Map<String, String> headers, BodyWriter stream) {
        public Response(int status, String contentType, byte[] body) {
            this(status, contentType, body, Map.of(), null);
        }

        /** An answer written as it is produced, chunked. */
        public static Response streamed(int status, String contentType, Map<String, String> headers, BodyWriter body) {
            return new Response(status, contentType, new byte[0], headers, body);
        }

        public static Response json(int status, Object value) {
            try {
                return new Response(status, "application/json", JSON.writeValueAsBytes(value));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        public static Response text(int status, String contentType, String body) {
            return new Response(status, contentType, body.getBytes(StandardCharsets.UTF_8));
        }

        /** A snapshot request the table refused: 400 a bad name or cut, 404 no such snapshot, 409 the name is taken. */
        public static Response refused(dev.rolloutingest.table.snapshots.TableSnapshots.SnapshotException e) {
            int status =
                    switch (e.kind()) {
                        case BAD_REQUEST -> 400;
                        case NOT_FOUND -> 404;
                        case CONFLICT -> 409;
                    };
            return error(status, e.getMessage());
        }

        /** A refusal for now (busy): the JSON error and {@code Retry-After: 1}. */
        public static Response retryLater(int status, String message) {
            return new Response(
                    status, "application/json", error(status, message).body(), Map.of("Retry-After", "1"), null);
        }

        public static Response error(int status, String message) {
            return json(status, Map.of("error", message, "status", status));
        }

        /**
         * A server-side failure: the client gets a short message and a correlation id, never paths or native
         * error text; the whole error is logged under the same id.
         */
        public static Response failure(int status, String clientMessage, Throwable error) {
            String id = UUID.randomUUID().toString().substring(0, 13);
            log.error("HTTP {} [correlation id {}]: {}", status, id, clientMessage, error);
            return json(status, Map.of("error", clientMessage, "status", status, "correlation_id", id));
        }
    }

    /** Handles one request; exceptions become a JSON 500. */
    @FunctionalInterface
    public interface Route {
        Response handle(HttpExchange exchange) throws Exception;
    }

    private final HttpServer server;
    /** Runs every request's first step, and the whole of /health and /metrics: never waits on data. */
    private final ExecutorService control;
    /** Runs the routes that read or change data, bounded by {@link HttpLimits#dataThreads()}. */
    private final ThreadPoolExecutor data;

    private final StalledClients stalled;
    private final HttpAccess access;

    /** An endpoint without authentication: loopback only. */
    public HttpEndpoint(String host, int port) {
        this(host, port, HttpAccess.OPEN);
    }

    public HttpEndpoint(String host, int port, HttpAccess access) {
        this(host, port, access, HttpLimits.DEFAULTS);
    }

    public HttpEndpoint(String host, int port, HttpAccess access, HttpLimits limits) {
        access.requireAllowedOn(host);
        this.access = access;
        try {
            InetSocketAddress address = new InetSocketAddress(host, port);
            if (access.tls().isPresent()) {
                HttpsServer https = HttpsServer.create(address, 64);
                https.setHttpsConfigurator(new HttpsConfigurator(access.tls().get()));
                this.server = https;
            } else {
                this.server = HttpServer.create(address, 64);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "Cannot bind the HTTP endpoint to " + host + ":" + port + " (" + e.getMessage()
                            + "); choose another with http.host / http.port (HTTP_HOST / HTTP_PORT)",
                    e);
        }
        int bound = server.getAddress().getPort();
        this.control = Executors.newFixedThreadPool(2, daemon("http-" + bound + "-control"));
        this.data = new ThreadPoolExecutor(
                limits.dataThreads(),
                limits.dataThreads(),
                0,
                TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(limits.dataThreads()),
                daemon("http-" + bound + "-data"));
        this.stalled = new StalledClients(limits.stallTimeoutMs(), "http-" + bound + "-stalls");
        server.setExecutor(control);
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /**
     * Adds a route for a path prefix (the JDK server matches the longest prefix), open to callers with what
     * {@code access} asks (checked before the route runs). {@link HttpAccess.Access#PUBLIC} and
     * {@link HttpAccess.Access#METRICS} routes (/health, /metrics) run on the control threads; every other route on
     * the data threads, so no read, however slow its client, keeps a probe waiting.
     */
    public HttpEndpoint route(String path, HttpAccess.Access access, Route route) {
        boolean controlLane = access == HttpAccess.Access.PUBLIC || access == HttpAccess.Access.METRICS;
        server.createContext(path, exchange -> {
            if (controlLane) {
                serve(exchange, access, route);
                return;
            }
            try {
                data.execute(() -> {
                    boolean answered = false;
                    try {
                        serve(exchange, access, route);
                        answered = true;
                    } catch (IOException | RuntimeException e) {
                        log.debug(
                                "HTTP answer to {} not completed: {}",
                                exchange.getRequestURI().getPath(),
                                e.toString());
                    } finally {
                        if (answered) {
                            exchange.close();
                        } else {
                            // an answer cut short must not end cleanly: drop the connection, never close the body
                            StalledClients.drop(exchange);
                        }
                    }
                });
            } catch (RejectedExecutionException e) {
                Response busy = Response.retryLater(
                        503,
                        "every data thread of this endpoint is busy (" + HttpLimits.DATA_THREADS + "); retry shortly");
                try {
                    send(exchange, busy, stalled);
                } finally {
                    exchange.close();
                }
            }
        });
        return this;
    }

    private void serve(HttpExchange exchange, HttpAccess.Access needed, Route route) throws IOException {
        Response response;
        try {
            response = this.access.refusal(exchange, needed).orElse(null);
            if (response == null) {
                response = route.handle(exchange);
            }
        } catch (Exception e) {
            response = Response.failure(
                    500,
                    "internal error while serving " + exchange.getRequestMethod() + " "
                            + exchange.getRequestURI().getPath(),
                    e);
        }
        send(exchange, response, stalled);
    }

    private static void send(HttpExchange exchange, Response response, StalledClients stalled) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", response.contentType());
        response.headers()
                .forEach((name, value) -> exchange.getResponseHeaders().set(name, value));
        if (response.stream() != null) {
            try {
                exchange.sendResponseHeaders(response.status(), 0); // chunked
            } catch (IOException e) {
                try {
                    response.stream().abandon();
                } catch (Exception ignored) {
                    // the connection is gone; what the answer held is released as far as it can be
                }
                throw e;
            }
            OutputStream out = stalled.guard(exchange);
            try {
                response.stream().write(out);
            } catch (Exception e) {
                // Not closing the body leaves the chunked answer without its last chunk: the server drops the
                // connection and the client sees a broken answer, never a short one that looks complete.
                String id = UUID.randomUUID().toString().substring(0, 13);
                log.error(
                        "HTTP streamed answer to {} failed part way [correlation id {}]",
                        exchange.getRequestURI().getPath(),
                        id,
                        e);
                throw new IOException("streamed answer failed part way [correlation id " + id + "]", e);
            }
            out.close();
            return;
        }
        exchange.sendResponseHeaders(response.status(), response.body().length == 0 ? -1 : response.body().length);
        try (OutputStream out = stalled.guard(exchange)) {
            out.write(response.body());
        }
    }

    public HttpEndpoint start() {
        stalled.start();
        server.start();
        log.info(
                "HTTP endpoint on {} ({})",
                baseUrl(),
                access.authenticates() ? "bearer tokens required" : "no authentication");
        return this;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public String baseUrl() {
        return (server instanceof HttpsServer ? "https://" : "http://")
                + server.getAddress().getHostString() + ":" + port();
    }

    @Override
    public void close() {
        server.stop(0);
        stalled.close();
        control.shutdownNow();
        data.shutdownNow();
        try {
            // a streamed answer still closing releases what it read (a table closed after this sees no reads)
            data.awaitTermination(5, TimeUnit.SECONDS);
            control.awaitTermination(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
