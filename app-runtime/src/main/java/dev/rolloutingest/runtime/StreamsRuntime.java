package dev.rolloutingest.runtime;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle of one Kafka Streams app: a failed stream thread is replaced (its uncommitted work is
 * aborted by exactly-once and redone from the last commit), Streams and client metrics are bound to the
 * registry (consumer lag included), and the state is exposed for /health.
 */
public final class StreamsRuntime implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StreamsRuntime.class);

    private final String name;
    private final KafkaStreams streams;
    private final KafkaStreamsMetrics metrics;

    public StreamsRuntime(String name, Topology topology, Properties props, MeterRegistry registry) {
        this.name = name;
        this.streams = new KafkaStreams(topology, props);
        this.streams.setUncaughtExceptionHandler(error -> {
            log.error("{}: stream thread failed, replacing it (uncommitted work is redone): {}", name, error.toString(), error);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        this.streams.setStateListener((now, before) -> log.info("{}: {} -> {}", name, before, now));
        this.metrics = new KafkaStreamsMetrics(streams);
        this.metrics.bindTo(registry);
    }

    public StreamsRuntime start() {
        streams.start();
        return this;
    }

    public KafkaStreams streams() {
        return streams;
    }

    public KafkaStreams.State state() {
        return streams.state();
    }

    public boolean healthy() {
        KafkaStreams.State state = streams.state();
        return state == KafkaStreams.State.RUNNING || state == KafkaStreams.State.REBALANCING
                || state == KafkaStreams.State.CREATED;
    }

    /** Waits until RUNNING; fails when the app errors or the time is up. */
    public void awaitRunning(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            KafkaStreams.State state = streams.state();
            if (state == KafkaStreams.State.RUNNING) {
                return;
            }
            if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.NOT_RUNNING) {
                throw new IllegalStateException(name + " stopped in state " + state);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted", e);
            }
        }
        throw new IllegalStateException(name + " not RUNNING within " + timeout + " (state " + streams.state() + ")");
    }

    public void mountHealth(HttpEndpoint http, java.util.function.Supplier<Map<String, Object>> details) {
        http.route("/health", exchange -> {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("app", name);
            body.put("state", streams.state().toString());
            body.putAll(details.get());
            return HttpEndpoint.Response.json(healthy() ? 200 : 503, body);
        });
    }

    /** Blocks until SIGTERM/SIGINT, then closes the app: the body of both apps' main(). */
    public static void runUntilTerminated(AutoCloseable app, String name) throws InterruptedException {
        java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                app.close();
            } catch (Exception e) {
                log.warn("{}: error while stopping: {}", name, e.toString());
            }
            stopped.countDown();
        }, name + "-shutdown"));
        stopped.await();
    }

    @Override
    public void close() {
        streams.close(Duration.ofSeconds(30));
        metrics.close();
    }
}
