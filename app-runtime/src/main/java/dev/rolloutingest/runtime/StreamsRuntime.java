package dev.rolloutingest.runtime;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lifecycle of one Kafka Streams app: a failed stream thread is replaced (its uncommitted work is
 * aborted by exactly-once and redone from the last commit) and its static member removed from the group, Streams and client metrics are bound to the
 * registry (consumer lag included), and the state is exposed for /health.
 */
public final class StreamsRuntime implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StreamsRuntime.class);

    private final String name;
    private final KafkaStreams streams;
    private final KafkaStreamsMetrics metrics;
    private final Counter replacementCounter;
    private final int maxReplacements;
    private final long replacementWindowMs;
    private final Deque<Long> replacements = new ArrayDeque<>();
    private volatile String lastThreadError;
    private final FailedMemberRemoval failedMembers;
    private final CleanCloseMark cleanClose;
    /** A stream thread that has not polled for longer than this is stuck: Kafka has already taken its partitions. */
    private final long stuckAfterMs;

    private volatile Runnable onRunning = () -> {};

    public StreamsRuntime(String name, Topology topology, Properties props, MeterRegistry registry) {
        this(name, topology, props, registry, 0, 1);
    }

    /**
     * @param maxReplacements /health turns unhealthy when more stream threads than this failed within
     *     {@code replacementWindowMs} (0 = never): a thread that keeps failing on the same work is stuck,
     *     however RUNNING the state looks
     */
    public StreamsRuntime(
            String name,
            Topology topology,
            Properties props,
            MeterRegistry registry,
            int maxReplacements,
            long replacementWindowMs) {
        this.name = name;
        this.maxReplacements = maxReplacements;
        this.replacementWindowMs = replacementWindowMs;
        this.replacementCounter = Counter.builder("rollout.streams.thread.replacements")
                .description("Stream threads that failed and were replaced (their uncommitted work is redone)")
                .register(registry);
        this.stuckAfterMs = maxPollIntervalMs(props);
        this.cleanClose = new CleanCloseMark(name, props);
        this.streams = new KafkaStreams(topology, props);
        cleanClose.wipeIfNotClosedCleanly(streams);
        this.failedMembers = new FailedMemberRemoval(name, props, this::streamThreadNames);
        this.streams.setUncaughtExceptionHandler(error -> {
            log.error(
                    "{}: stream thread failed, replacing it (uncommitted work is redone): {}",
                    name,
                    error.toString(),
                    error);
            replacementCounter.increment();
            lastThreadError = rootMessage(error);
            synchronized (replacements) {
                replacements.addLast(System.currentTimeMillis());
            }
            failedMembers.afterEnd(Thread.currentThread());
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        this.streams.setStateListener((now, before) -> {
            log.info("{}: {} -> {}", name, before, now);
            if (now == KafkaStreams.State.RUNNING) {
                onRunning.run();
            }
        });
        this.metrics = new KafkaStreamsMetrics(streams);
        this.metrics.bindTo(registry);
        // Kafka's own client-state metric is a string, which Prometheus cannot hold: alerts need a number.
        Gauge.builder("rollout.app.running", this, r -> r.state() == KafkaStreams.State.RUNNING ? 1 : 0)
                .description("1 while the Streams client is RUNNING, 0 in any other state (starting,"
                        + " rebalancing, pending shutdown, error)")
                .tag("app", name)
                .register(registry);
    }

    /** Runs {@code action} each time Streams becomes RUNNING (on a stream thread; keep it short). */
    public void onRunning(Runnable action) {
        this.onRunning = action;
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
        return problems().isEmpty();
    }

    /** Why this app is unhealthy; empty when it is fine. */
    public List<String> problems() {
        List<String> problems = new ArrayList<>();
        KafkaStreams.State state = streams.state();
        if (!(state == KafkaStreams.State.RUNNING
                || state == KafkaStreams.State.REBALANCING
                || state == KafkaStreams.State.CREATED)) {
            problems.add("Kafka Streams is " + state);
        }
        if (state == KafkaStreams.State.RUNNING || state == KafkaStreams.State.REBALANCING) {
            stuckThreads()
                    .forEach((thread, secondsAgo) -> problems.add(thread + " has not polled Kafka for "
                            + Math.round(secondsAgo) + " s, over max.poll.interval.ms (" + stuckAfterMs / 1000
                            + " s): it is stuck in its work (its partitions went to another member)"));
        }
        int recent = recentReplacements(System.currentTimeMillis());
        if (maxReplacements > 0 && recent > maxReplacements) {
            problems.add(recent + " stream threads failed and were replaced in the last " + replacementWindowMs / 1000
                    + " s (limit " + maxReplacements + "); last error: " + lastThreadError);
        }
        return problems;
    }

    /**
     * The stream threads whose main consumer last polled longer ago than max.poll.interval.ms, with how long ago: a
     * thread blocked for good (a call into a store or a native library that never returns) still looks RUNNING to
     * Kafka Streams, so /health asks the consumer's own clock.
     */
    Map<String, Double> stuckThreads() {
        Map<String, Double> stuck = new TreeMap<>();
        for (Map.Entry<MetricName, ? extends Metric> metric : streams.metrics().entrySet()) {
            MetricName id = metric.getKey();
            String client = id.tags().get("client-id");
            if (!"last-poll-seconds-ago".equals(id.name())
                    || !"consumer-metrics".equals(id.group())
                    || client == null
                    || !client.endsWith("-consumer")
                    || client.endsWith("-restore-consumer")) {
                continue; // the restore consumer polls only while it restores
            }
            if (metric.getValue().metricValue() instanceof Number secondsAgo
                    && secondsAgo.doubleValue() * 1000 > stuckAfterMs) {
                stuck.put(client.substring(0, client.length() - "-consumer".length()), secondsAgo.doubleValue());
            }
        }
        return stuck;
    }

    private static long maxPollIntervalMs(Properties props) {
        for (String key : List.of(
                StreamsConfig.mainConsumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG),
                StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG),
                ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG)) {
            Object value = props.get(key);
            if (value != null) {
                return Long.parseLong(value.toString().trim());
            }
        }
        return 300_000; // Kafka's default
    }

    private int recentReplacements(long now) {
        synchronized (replacements) {
            while (!replacements.isEmpty() && replacements.peekFirst() < now - replacementWindowMs) {
                replacements.pollFirst();
            }
            return replacements.size();
        }
    }

    private static String rootMessage(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root == error
                ? String.valueOf(error.getMessage())
                : error.getMessage() + " (cause: " + root.getMessage() + ")";
    }

    private Set<String> streamThreadNames() {
        Set<String> names = new HashSet<>();
        try {
            streams.metadataForLocalThreads().forEach(thread -> names.add(thread.threadName()));
        } catch (RuntimeException e) {
            // not running: no thread
        }
        return names;
    }

    /** Input partitions assigned to this instance's active tasks. */
    public Set<TopicPartition> assignedPartitions() {
        Set<TopicPartition> assigned = new HashSet<>();
        try {
            streams.metadataForLocalThreads()
                    .forEach(thread -> thread.activeTasks().forEach(task -> assigned.addAll(task.topicPartitions())));
        } catch (RuntimeException e) {
            // not running: nothing is assigned
        }
        return assigned;
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

    public void mountHealth(HttpEndpoint http, Supplier<Map<String, Object>> details) {
        mountHealth(http, details, List::of);
    }

    /**
     * /health: 200 when RUNNING (or getting there) and nothing is stuck, else 503 with the problems named.
     *
     * @param appProblems the app's own checks (e.g. partitions that cannot seal)
     */
    public void mountHealth(
            HttpEndpoint http, Supplier<Map<String, Object>> details, Supplier<List<String>> appProblems) {
        http.route("/health", HttpAccess.Access.PUBLIC, exchange -> {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("app", name);
            body.put("state", streams.state().toString());
            body.putAll(details.get());
            List<String> problems = new ArrayList<>(problems());
            problems.addAll(appProblems.get());
            body.put("problems", problems);
            return HttpEndpoint.Response.json(problems.isEmpty() ? 200 : 503, body);
        });
    }

    /** Blocks until SIGTERM/SIGINT, then closes the app: the body of both apps' main(). */
    public static void runUntilTerminated(AutoCloseable app, String name) throws InterruptedException {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            try {
                                app.close();
                            } catch (Exception e) {
                                log.warn("{}: error while stopping: {}", name, e.toString());
                            }
                            stopped.countDown();
                        },
                        name + "-shutdown"));
        stopped.await();
    }

    @Override
    public void close() {
        // Leave the group explicitly: a static member that just stops would keep its partitions until the
        // session timeout; leaving hands them to the other instances at once.
        if (streams.close(
                new KafkaStreams.CloseOptions().timeout(Duration.ofSeconds(30)).leaveGroup(true))) {
            cleanClose.closedCleanly();
        }
        failedMembers.close();
        metrics.close();
    }
}
