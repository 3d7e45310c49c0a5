package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The HTTP endpoint's limits on a real socket: probes never wait behind data, and an answer whose client stops reading
 * is dropped after the stall limit, freeing its thread.
 */
class HttpEndpointLimitsTest {
    private final HttpClient client = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    @Test
    void healthAnswersWhileEveryDataThreadIsHeldAndAFullQueueGets503() throws Exception {
        int threads = 2;
        CountDownLatch entered = new CountDownLatch(threads);
        CountDownLatch release = new CountDownLatch(1);
        HttpEndpoint http = endpoint(new HttpLimits(threads, 60_000))
                .route("/hold", HttpAccess.Access.READ, exchange -> {
                    entered.countDown();
                    release.await(60, TimeUnit.SECONDS);
                    return HttpEndpoint.Response.text(200, "text/plain", "held");
                })
                .route(
                        "/health",
                        HttpAccess.Access.PUBLIC,
                        exchange -> HttpEndpoint.Response.text(200, "text/plain", "ok"))
                .start();
        List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
        for (int i = 0; i < threads * 2; i++) { // every data thread, then every place in the queue
            held.add(client.sendAsync(get(http, "/hold"), HttpResponse.BodyHandlers.ofString()));
        }
        assertThat(entered.await(10, TimeUnit.SECONDS))
                .as("every data thread holds a request")
                .isTrue();
        Thread.sleep(200); // the queued requests reach the queue

        // the held requests are released only after this: a /health queued behind them would never answer, so
        // answering at all is the behaviour; the bound is only there to end the test
        HttpResponse<String> health = client.send(
                HttpRequest.newBuilder(URI.create(http.baseUrl() + "/health"))
                        .timeout(Duration.ofSeconds(20))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode())
                .as("/health waits behind no data thread")
                .isEqualTo(200);

        HttpResponse<String> overflow = client.send(get(http, "/hold"), HttpResponse.BodyHandlers.ofString());
        assertThat(overflow.statusCode()).isEqualTo(503);
        assertThat(overflow.body()).contains(HttpLimits.DATA_THREADS);
        assertThat(overflow.headers().firstValue("Retry-After")).hasValue("1");

        release.countDown();
        for (CompletableFuture<HttpResponse<String>> response : held) {
            assertThat(response.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void anAnswerWhoseClientStopsReadingIsDroppedWithinTheStallLimitAndItsThreadFreed() throws Exception {
        long stallMs = 500;
        CompletableFuture<Throwable> writerEnded = new CompletableFuture<>();
        AtomicLong lastWriteStarted = new AtomicLong();
        HttpEndpoint http = endpoint(new HttpLimits(1, stallMs))
                .route(
                        "/endless",
                        HttpAccess.Access.READ,
                        exchange -> HttpEndpoint.Response.streamed(
                                200, "application/octet-stream", java.util.Map.of(), out -> {
                                    byte[] chunk = new byte[64 * 1024];
                                    try {
                                        while (true) {
                                            lastWriteStarted.set(System.nanoTime());
                                            out.write(chunk);
                                        }
                                    } catch (Exception e) {
                                        writerEnded.complete(e);
                                        throw e;
                                    }
                                }))
                .route(
                        "/small",
                        HttpAccess.Access.READ,
                        exchange -> HttpEndpoint.Response.text(200, "text/plain", "ok"))
                .start();
        try (Socket stalled = new Socket("127.0.0.1", http.port())) {
            stalled.setReceiveBufferSize(4096);
            OutputStream request = stalled.getOutputStream();
            request.write(("GET /endless HTTP/1.1\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            request.flush();
            // the client reads nothing: the server's writes fill the socket buffers, then block

            Throwable ended = writerEnded.get(30, TimeUnit.SECONDS);
            long blockedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastWriteStarted.get());
            assertThat(ended).hasMessageContaining(HttpLimits.STALL_TIMEOUT_MS);
            assertThat(blockedMs)
                    .as("dropped for the stall, not before the limit (and not left blocked)")
                    .isGreaterThanOrEqualTo(stallMs)
                    .isLessThan(20_000);

            // the only data thread is free again
            HttpResponse<String> next = client.send(get(http, "/small"), HttpResponse.BodyHandlers.ofString());
            assertThat(next.statusCode()).isEqualTo(200);
            assertThat(next.body()).isEqualTo("ok");
        }
    }

    private HttpEndpoint endpoint(HttpLimits limits) {
        HttpEndpoint http = new HttpEndpoint("127.0.0.1", 0, HttpAccess.OPEN, limits);
        open.add(http);
        return http;
    }

    private static HttpRequest get(HttpEndpoint http, String path) {
        return HttpRequest.newBuilder(URI.create(http.baseUrl() + path))
                .timeout(Duration.ofSeconds(30))
                .build();
    }
}
