package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.merge.MergeMetrics;
import dev.rolloutingest.merge.ShardMerges;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.SharedByTables;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * One hot table among cold ones on one process's merge capacity, sustained: the hot table gets {@code hotFactor} times the
 * generations of each cold one, all written as they come while a driver asks for each table's merge through the merge-worker's
 * {@link ShardMerges} once its pending generations reach the count trigger (the scheduler's rule). Reported: every table's highest pending count over the
 * run against the trigger, the hot one apart, and the merge rate against the write rate.
 */
public final class FleetFairnessBench {
    private static final String TOPIC = "bench";
    private static final String SHARD = ShardId.of(TOPIC, 0);

    private final Path dir;
    private final int tables;
    private final int hotFactor;
    private final int seconds;
    private final int rows;
    private final int trigger;
    private final int coldPerSecond;
    private final int parallel;
    private final int threads;
    private final NewKeyGenerations newKeys;
    private final TableSettings settings = NewKeyGenerations.UNBOUNDED_PENDING;

    public FleetFairnessBench(
            Path dir,
            int tables,
            int hotFactor,
            int seconds,
            int rows,
            int trigger,
            int coldPerSecond,
            int parallel,
            int threads) {
        this.dir = dir;
        this.tables = tables;
        this.hotFactor = hotFactor;
        this.seconds = seconds;
        this.rows = rows;
        this.newKeys = new NewKeyGenerations(TOPIC, rows, 256);
        this.trigger = trigger;
        this.coldPerSecond = coldPerSecond;
        this.parallel = parallel;
        this.threads = threads;
    }

    public void run() throws Exception {
        Path root = dir.toAbsolutePath().resolve("fairness-" + tables);
        FileTrees.deleteRecursively(root);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        SharedByTables shared = BenchMerges.shared(settings, threads, parallel);
        ShardMerges passes = new ShardMerges(new MergeMetrics(meters), 8, result -> {});
        List<RolloutTable> opened = new ArrayList<>();
        AtomicIntegerArray written = new AtomicIntegerArray(tables);
        int[] merged = new int[tables];
        int[] maxPending = new int[tables];
        AtomicBoolean writing = new AtomicBoolean(true);
        try {
            for (int t = 0; t < tables; t++) {
                RolloutTable table = RolloutTable.createOrOpen(
                        TableLocation.local(root.resolve(String.format("t%03d", t))), settings, meters, shared);
                opened.add(table);
            }
            System.out.printf(
                    "%d tables on one merge capacity (rollout.merge.tables.parallel %d, rollout.merge.threads %d) for"
                            + " %d s: table 0 hot at %d generations/s, the others %d/s each; %d rows (256 B payloads)"
                            + " per generation; a merge is asked for at %d pending (the count trigger), 8 generations"
                            + " per pass at most%n%n",
                    tables, parallel, threads, seconds, coldPerSecond * hotFactor, coldPerSecond, rows, trigger);
            // The writer: generations as they come, the hot table's hotFactor times as often, spread over each second.
            Thread writer = new Thread(
                    () -> {
                        long start = System.nanoTime();
                        int perSecond = coldPerSecond * (tables - 1 + hotFactor);
                        long slot = 1_000_000_000L / perSecond;
                        long n = 0;
                        while (writing.get()) {
                            int inSecond = (int) (n % perSecond);
                            int t = inSecond < coldPerSecond * hotFactor
                                    ? 0
                                    : 1 + (inSecond - coldPerSecond * hotFactor) % (tables - 1);
                            newKeys.write(opened.get(t), t, written.get(t));
                            written.incrementAndGet(t);
                            n++;
                            long due = start + n * slot;
                            long wait = due - System.nanoTime();
                            if (wait > 0) {
                                sleepNanos(wait);
                            }
                        }
                    },
                    "writer");
            long started = System.nanoTime();
            writer.start();
            long end = started + seconds * 1_000_000_000L;
            while (System.nanoTime() < end) {
                for (int t = 0; t < tables; t++) {
                    String key = "t" + t;
                    for (ShardMerges.Outcome outcome : passes.drain(key)) {
                        if (outcome.failed()) {
                            throw new IllegalStateException("a merge of table " + t + " failed", outcome.error());
                        }
                        merged[t] += outcome.result().mergedGenerations().size();
                    }
                    int pending = written.get(t) - merged[t];
                    maxPending[t] = Math.max(maxPending[t], pending);
                    if (pending >= trigger) {
                        passes.submit(key, opened.get(t), SHARD, MergeTrigger.COUNT); // unless running
                    }
                }
                Thread.sleep(10); // the scheduler's tick
            }
            writing.set(false);
            writer.join();
            double elapsed = (System.nanoTime() - started) / 1e9;
            long writtenTotal = 0;
            long mergedTotal = 0;
            for (int t = 0; t < tables; t++) {
                writtenTotal += written.get(t);
                mergedTotal += merged[t];
            }
            int[] cold = Arrays.copyOfRange(maxPending, 1, tables);
            Arrays.sort(cold);
            System.out.println(
                    "| table | generations written | merged | highest pending | vs the trigger (" + trigger + ") |");
            System.out.println("|---|---|---|---|---|");
            System.out.printf(
                    "| hot | %d | %d | %d | %.2fx |%n",
                    written.get(0), merged[0], maxPending[0], (double) maxPending[0] / trigger);
            System.out.printf(
                    "| cold, the worst of %d | %d (each, about) | %d (each, about) | %d | %.2fx |%n",
                    tables - 1,
                    written.get(1),
                    merged[1],
                    cold[cold.length - 1],
                    (double) cold[cold.length - 1] / trigger);
            System.out.printf(
                    "| cold, median | | | %d | %.2fx |%n",
                    cold[cold.length / 2], (double) cold[cold.length / 2] / trigger);
            System.out.printf(
                    "%nwritten %.1f generations/s (asked %d/s), merged %.1f generations/s, %d rounds%n",
                    writtenTotal / elapsed, coldPerSecond * (tables - 1 + hotFactor), mergedTotal / elapsed, (long)
                            meters.counter("rollout.merge.rounds").count());
        } finally {
            writing.set(false);
            opened.forEach(RolloutTable::close); // before the capacity: a round in flight still prepares
            shared.close();
        }
    }

    private static void sleepNanos(long nanos) {
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
