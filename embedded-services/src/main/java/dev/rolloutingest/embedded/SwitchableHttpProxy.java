package dev.rolloutingest.embedded;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An HTTP reverse proxy on loopback in front of a real server (the schema registry), with a switch: pass
 * requests through, or answer every request with a given status (503 for an outage, 401/403 for refused
 * credentials, 429 for rate limiting). How tests put a real server out of service for a while without
 * losing its state.
 */
public final class SwitchableHttpProxy implements AutoCloseable {
    private static final Set<String> HOP_BY_HOP =
            Set.of("connection", "content-length", "host", "transfer-encoding", "upgrade", "keep-alive", "expect");

    private final HttpServer server;
    private final ExecutorService executor;
    private final HttpClient client =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI target;
    private final AtomicInteger answerWith = new AtomicInteger(0);
    private final AtomicLong refused = new AtomicLong();

    private SwitchableHttpProxy(URI target) {
        this.target = target;
        try {
            this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        this.executor = Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "switchable-proxy");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    /** A proxy in front of {@code target} (scheme, host and port; paths are passed through). */
    public static SwitchableHttpProxy start(URI target) {
        return new SwitchableHttpProxy(target);
    }

    /** This proxy's URL for the same path as {@code url} on the target (e.g. the registry's ccompat URL). */
    public String url(String targetUrl) {
        URI u = URI.create(targetUrl);
        return "http://127.0.0.1:" + server.getAddress().getPort() + u.getRawPath();
    }

    /** From now on every request is answered with {@code status} (0 = passed through again). */
    public void answerEveryRequestWith(int status) {
        answerWith.set(status);
    }

    public void passThrough() {
        answerWith.set(0);
    }

    /** Requests answered by the switch instead of the target. */
    public long refusedRequests() {
        return refused.get();
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            int status = answerWith.get();
            if (status != 0) {
                refused.incrementAndGet();
                byte[] body =
                        ("{\"error_code\":" + status + ",\"message\":\"switched off by the test proxy\"}").getBytes();
                exchange.getResponseHeaders().set("Content-Type", "application/json");
                exchange.sendResponseHeaders(status, body.length);
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
                return;
            }
            byte[] requestBody;
            try (InputStream in = exchange.getRequestBody()) {
                requestBody = in.readAllBytes();
            }
            URI uri = target.resolve(exchange.getRequestURI().toString());
            HttpRequest.Builder request = HttpRequest.newBuilder(uri)
                    .timeout(Duration.ofSeconds(30))
                    .method(
                            exchange.getRequestMethod(),
                            requestBody.length == 0
                                    ? HttpRequest.BodyPublishers.noBody()
                                    : HttpRequest.BodyPublishers.ofByteArray(requestBody));
            exchange.getRequestHeaders().forEach((name, values) -> {
                if (!HOP_BY_HOP.contains(name.toLowerCase())) {
                    values.forEach(v -> request.header(name, v));
                }
            });
            HttpResponse<byte[]> response;
            try {
                response = client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                exchange.sendResponseHeaders(502, -1);
                return;
            } catch (IOException e) {
                exchange.sendResponseHeaders(502, -1);
                return;
            }
            response.headers().map().forEach((name, values) -> {
                if (!HOP_BY_HOP.contains(name.toLowerCase()) && !name.startsWith(":")) {
                    values.forEach(v -> exchange.getResponseHeaders().add(name, v));
                }
            });
            byte[] body = response.body();
            exchange.sendResponseHeaders(response.statusCode(), body.length == 0 ? -1 : body.length);
            if (body.length > 0) {
                try (OutputStream out = exchange.getResponseBody()) {
                    out.write(body);
                }
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
