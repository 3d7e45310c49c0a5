package dev.rolloutingest.merge;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the tables' upkeep (compaction, record_id index, GC, the drop of old deletes) on a small pool of its own
 * ({@code rollout.maintenance.threads}), off the stream threads and apart from merge rounds; a kind still running on
 * a table is not started twice. A table whose upkeep fails fails alone: its outcome cools that table down, the others
 * go on. One that hangs is bounded too: past {@code rollout.maintenance.timeout.ms} it is reported failed (its table
 * cools down) while the rest of the pool serves the other tables; its thread is free again once lance-core returns.
 * Finished jobs wait until the owning task applies them (cooldowns) on its own thread.
 */
final class TableMaintenanceRunner implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TableMaintenanceRunner.class);

    /** A finished run of a table (kind = compact | index | gc | deletes): its summary, or the error that failed it. */
    record Outcome(String table, String tableUri, String kind, Throwable error, String summary) {}

    /** A job started and not finished: when it started, and whether its overrun was reported already. */
    private static final class Running {
        final String table;
        final String tableUri;
        final String kind;
        volatile long startedNanos; // 0 while queued: a job waiting for a thread is not overrunning
        volatile boolean overrunReported;

        Running(String table, String tableUri, String kind) {
            this.table = table;
            this.tableUri = tableUri;
            this.kind = kind;
        }
    }

    private final MergeMetrics metrics;
    private final ExecutorService workers;
    private final Duration timeout;
    private final Queue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
    private final Map<String, Running> running = new ConcurrentHashMap<>();

    TableMaintenanceRunner(MergeMetrics metrics) {
        this(metrics, 1, Duration.ofMinutes(30));
    }

    /**
     * @param threads tables served at once
     * @param timeout how long a job may run before it counts as a failure of its table
     */
    TableMaintenanceRunner(MergeMetrics metrics, int threads, Duration timeout) {
        this.metrics = metrics;
        this.timeout = timeout;
        AtomicInteger n = new AtomicInteger();
        this.workers = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "table-maintenance-" + n.incrementAndGet());
            t.setDaemon(true); // upkeep never keeps the JVM from exiting
            return t;
        });
    }

    /** Starts a run of this kind on the table unless one is still queued or running; false when it is. */
    boolean submit(String table, String tableUri, String kind, Supplier<String> work) {
        String job = kind + " " + table;
        Running entry = new Running(table, tableUri, kind);
        if (running.putIfAbsent(job, entry) != null) {
            return false;
        }
        workers.execute(() -> {
            entry.startedNanos = System.nanoTime();
            try {
                String summary = work.get();
                if (!entry.overrunReported) {
                    outcomes.add(new Outcome(table, tableUri, kind, null, summary));
                }
                metrics.maintenance(kind, "success");
            } catch (Exception e) {
                log.warn("Table {}: {} failed: {}", tableUri, kind, e.getMessage());
                if (!entry.overrunReported) {
                    outcomes.add(new Outcome(table, tableUri, kind, e, null));
                }
                metrics.maintenance(kind, "failure");
            } finally {
                running.remove(job);
            }
        });
        return true;
    }

    /**
     * Finished runs that {@code mine} takes (a task's tables), oldest first, removed from the queue; the others stay
     * queued. A job over its time counts as a failure, once.
     */
    List<Outcome> drain(java.util.function.Predicate<Outcome> mine) {
        long now = System.nanoTime();
        for (Running r : running.values()) {
            long started = r.startedNanos;
            if (started != 0 && !r.overrunReported && now - started > timeout.toNanos()) {
                r.overrunReported = true;
                log.warn(
                        "Table {}: {} still running after {} ms; counted as a failure of the table, the other"
                                + " tables' upkeep goes on",
                        r.tableUri,
                        r.kind,
                        timeout.toMillis());
                outcomes.add(new Outcome(
                        r.table,
                        r.tableUri,
                        r.kind,
                        new TimeoutException(r.kind + " still running after " + timeout.toMillis() + " ms"),
                        null));
                metrics.maintenance(r.kind, "timeout");
            }
        }
        List<Outcome> drained = new ArrayList<>();
        for (var it = outcomes.iterator(); it.hasNext(); ) {
            Outcome o = it.next();
            if (mine.test(o)) {
                it.remove();
                drained.add(o);
            }
        }
        return drained;
    }

    @Override
    public void close() {
        workers.shutdown();
        try {
            workers.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
