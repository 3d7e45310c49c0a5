package dev.rolloutingest.merge;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the tables' upkeep (compaction, record_id index, GC, the drop of old deletes) one job at a time on a thread of its own, off
 * the stream threads and apart from merge rounds; a kind still running is not started twice. Finished jobs
 * wait until the owning task applies them (cooldowns) on its own thread.
 */
final class TableMaintenanceRunner implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TableMaintenanceRunner.class);

    /** A finished run of a table (kind = compact | index | gc | deletes): its summary, or the error that failed it. */
    record Outcome(String table, String tableUri, String kind, Throwable error, String summary) {}

    private final MergeMetrics metrics;
    private final ExecutorService worker;
    private final Queue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
    private final Set<String> running = ConcurrentHashMap.newKeySet();

    TableMaintenanceRunner(MergeMetrics metrics) {
        this.metrics = metrics;
        this.worker = Executors.newSingleThreadExecutor(r -> MergeCoordinator.daemon(r, "table-maintenance"));
    }

    /** Starts a run of this kind on the table unless one is still queued or running; false when it is. */
    boolean submit(String table, String tableUri, String kind, Supplier<String> work) {
        String job = kind + " " + table;
        if (!running.add(job)) {
            return false;
        }
        worker.execute(() -> {
            try {
                outcomes.add(new Outcome(table, tableUri, kind, null, work.get()));
                metrics.maintenance(kind, "success");
            } catch (Exception e) {
                log.warn("Table {}: {} failed: {}", tableUri, kind, e.getMessage());
                outcomes.add(new Outcome(table, tableUri, kind, e, null));
                metrics.maintenance(kind, "failure");
            } finally {
                running.remove(job);
            }
        });
        return true;
    }

    /** Finished runs, oldest first, removed from the queue. */
    List<Outcome> drain() {
        List<Outcome> drained = new ArrayList<>();
        for (Outcome o; (o = outcomes.poll()) != null; ) {
            drained.add(o);
        }
        return drained;
    }

    @Override
    public void close() {
        worker.shutdown();
        try {
            worker.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
