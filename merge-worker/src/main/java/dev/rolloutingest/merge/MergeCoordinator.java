package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.MergeResult;
import dev.rolloutingest.table.RolloutTable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs merge passes off the stream threads, so a slow or failing shard never blocks polling (no
 * rebalance) and never delays other shards: a pool of {@code rollout.merge.threads} workers, one pass
 * per shard at a time (a per-shard lock also orders manual passes after a running one). Finished passes
 * wait in a per-shard queue until the owning task applies them to its state stores on its own thread.
 * Compaction and GC run one at a time on a separate single worker.
 */
public final class MergeCoordinator implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(MergeCoordinator.class);

    /** A finished pass: the result, or the error that failed it. */
    public record Outcome(String shard, MergeTrigger trigger, MergeResult result, Throwable error, Duration duration,
            long finishedAtMs) {
        public boolean failed() {
            return error != null;
        }
    }

    /** A finished maintenance run (kind = compact | gc). */
    public record MaintenanceOutcome(String kind, Throwable error, String summary) {}

    private final RolloutTable table;
    private final int maxGenerations;
    private final long maxBytes;
    private final MergeMetrics metrics;
    private final ExecutorService passes;
    private final ExecutorService maintenance;
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    private final Map<String, Object> shardLocks = new ConcurrentHashMap<>();
    private final Map<String, Queue<Outcome>> outcomes = new ConcurrentHashMap<>();
    private final Queue<MaintenanceOutcome> maintenanceOutcomes = new ConcurrentLinkedQueue<>();
    private final Set<String> maintenanceRunning = ConcurrentHashMap.newKeySet();

    private final int haltAfterMerges;
    private final AtomicInteger committedPasses = new AtomicInteger();

    public MergeCoordinator(RolloutTable table, int maxGenerations, long maxBytes, int threads, MergeMetrics metrics) {
        this(table, maxGenerations, maxBytes, threads, metrics, 0);
    }

    /** @param haltAfterMerges fault injection: halt the JVM after this many committed passes (0 = never) */
    public MergeCoordinator(RolloutTable table, int maxGenerations, long maxBytes, int threads, MergeMetrics metrics,
            int haltAfterMerges) {
        this.haltAfterMerges = haltAfterMerges;
        this.table = table;
        this.maxGenerations = maxGenerations;
        this.maxBytes = maxBytes;
        this.metrics = metrics;
        AtomicInteger n = new AtomicInteger();
        this.passes = Executors.newFixedThreadPool(threads, r -> daemon(r, "merge-pass-" + n.incrementAndGet()));
        this.maintenance = Executors.newSingleThreadExecutor(r -> daemon(r, "table-maintenance"));
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    public RolloutTable table() {
        return table;
    }

    public boolean running(String shard) {
        return inFlight.contains(shard);
    }

    /** Starts an automatic pass unless one of this shard is already running; false when skipped. */
    public boolean submit(String shard, MergeTrigger trigger) {
        if (!inFlight.add(shard)) {
            return false;
        }
        passes.execute(() -> run(shard, trigger, null));
        return true;
    }

    /** A manual pass: never skipped, never gated; runs after the shard's current pass if one is running. */
    public CompletableFuture<Outcome> manual(String shard) {
        CompletableFuture<Outcome> done = new CompletableFuture<>();
        passes.execute(() -> {
            inFlight.add(shard);
            run(shard, MergeTrigger.MANUAL, done);
        });
        return done;
    }

    private void run(String shard, MergeTrigger trigger, CompletableFuture<Outcome> done) {
        long started = System.nanoTime();
        Outcome outcome;
        synchronized (shardLocks.computeIfAbsent(shard, s -> new Object())) {
            try {
                MergeResult result = table.mergePass(shard, maxGenerations, maxBytes);
                if (haltAfterMerges > 0 && result.mergedAnything() && committedPasses.incrementAndGet() == haltAfterMerges) {
                    log.warn("Fault injection: halting after committed merge pass {} of shard {}", haltAfterMerges, shard);
                    Runtime.getRuntime().halt(137);
                }
                outcome = new Outcome(shard, trigger, result, null, Duration.ofNanos(System.nanoTime() - started),
                        System.currentTimeMillis());
                metrics.pass(name(trigger), result.mergedAnything() ? "success" : "empty", outcome.duration());
                metrics.merged(result.mergedGenerations().size());
            } catch (Throwable e) {
                outcome = new Outcome(shard, trigger, null, e, Duration.ofNanos(System.nanoTime() - started),
                        System.currentTimeMillis());
                metrics.pass(name(trigger), "failure", outcome.duration());
                log.warn("Table {} shard {}: {} merge pass failed: {}", table.location(), shard, name(trigger), e.getMessage());
            } finally {
                inFlight.remove(shard);
            }
        }
        outcomes.computeIfAbsent(shard, s -> new ConcurrentLinkedQueue<>()).add(outcome);
        if (done != null) {
            done.complete(outcome);
        }
    }

    /** Finished passes of a shard, oldest first, removed from the queue. */
    public List<Outcome> drain(String shard) {
        Queue<Outcome> queue = outcomes.get(shard);
        List<Outcome> drained = new ArrayList<>();
        if (queue != null) {
            for (Outcome o; (o = queue.poll()) != null; ) {
                drained.add(o);
            }
        }
        return drained;
    }

    /** Runs compaction or GC unless the same kind is still running. */
    public boolean submitMaintenance(String kind, java.util.function.Supplier<String> work) {
        if (!maintenanceRunning.add(kind)) {
            return false;
        }
        maintenance.execute(() -> {
            try {
                String summary = work.get();
                maintenanceOutcomes.add(new MaintenanceOutcome(kind, null, summary));
                metrics.maintenance(kind, "success");
            } catch (Throwable e) {
                log.warn("Table {}: {} failed: {}", table.location(), kind, e.getMessage());
                maintenanceOutcomes.add(new MaintenanceOutcome(kind, e, null));
                metrics.maintenance(kind, "failure");
            } finally {
                maintenanceRunning.remove(kind);
            }
        });
        return true;
    }

    public List<MaintenanceOutcome> drainMaintenance() {
        List<MaintenanceOutcome> drained = new ArrayList<>();
        for (MaintenanceOutcome o; (o = maintenanceOutcomes.poll()) != null; ) {
            drained.add(o);
        }
        return drained;
    }

    static String name(MergeTrigger trigger) {
        return trigger.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void close() {
        passes.shutdown();
        maintenance.shutdown();
        try {
            // A pass in flight commits or not as a whole; waiting lets it finish cleanly.
            passes.awaitTermination(60, TimeUnit.SECONDS);
            maintenance.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
