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
import java.util.List;

/**
 * The same backlog (generations of new keys) spread over 1, 10, 100 tables of one shard, drained by one process's
 * merge capacity ({@code rollout.merge.threads}, {@code rollout.merge.tables.parallel}): merge rows/s per table count, side by side in one run, against the first count. A driver asks
 * for each table's passes every 10 ms through the merge-worker's {@link ShardMerges}, as its scheduler's tick does.
 */
public final class FleetSpreadBench {
    private static final String TOPIC = "bench";
    private static final String SHARD = ShardId.of(TOPIC, 0);

    private final Path dir;
    private final int[] tableCounts;
    private final int totalGenerations;
    private final int rows;
    private final int parallel;
    private final int threads;
    private final NewKeyGenerations newKeys;
    private final TableSettings settings = NewKeyGenerations.UNBOUNDED_PENDING;

    public FleetSpreadBench(Path dir, int[] tableCounts, int totalGenerations, int rows, int parallel, int threads) {
        this.dir = dir;
        this.tableCounts = tableCounts;
        this.totalGenerations = totalGenerations;
        this.rows = rows;
        this.newKeys = new NewKeyGenerations(TOPIC, rows, 1024);
        this.parallel = parallel;
        this.threads = threads;
    }

    public void run() throws Exception {
        System.out.printf(
                "%d generations x %,d rows (new keys, 1 KiB payload) spread evenly over each table count;"
                        + " merge.max.generations 8, rollout.merge.tables.parallel %d, rollout.merge.threads %d%n%n",
                totalGenerations, rows, parallel, threads);
        drain(Math.min(tableCounts[0], 4), 8); // warm-up
        System.out.println("| tables | generations per table | drain | merge rows/s | vs " + tableCounts[0]
                + " table(s) | rounds |");
        System.out.println("|---|---|---|---|---|---|");
        double first = 0;
        for (int count : tableCounts) {
            double[] r = drain(count, totalGenerations / count);
            double rate = (double) count * (totalGenerations / count) * rows / r[0];
            if (first == 0) {
                first = rate;
            }
            System.out.printf(
                    "| %d | %d | %.1f s | %,.0f | %.2f | %d |%n",
                    count, totalGenerations / count, r[0], rate, rate / first, (long) r[1]);
        }
    }

    /** Seconds to drain {@code count} tables of {@code generations} each, and the rounds committed. */
    private double[] drain(int count, int generations) throws Exception {
        Path root = dir.toAbsolutePath().resolve("spread-" + count + "-" + generations);
        FileTrees.deleteRecursively(root);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        List<RolloutTable> opened = new ArrayList<>();
        try (SharedByTables shared = BenchMerges.shared(settings, threads, parallel)) {
            try {
                for (int t = 0; t < count; t++) {
                    RolloutTable table = RolloutTable.createOrOpen(
                            TableLocation.local(root.resolve(String.format("t%03d", t))), settings, meters, shared);
                    opened.add(table);
                    for (int g = 0; g < generations; g++) {
                        newKeys.write(table, t, g);
                    }
                }
                ShardMerges passes = new ShardMerges(new MergeMetrics(meters), 8, result -> {});
                int[] pending = new int[count];
                java.util.Arrays.fill(pending, generations);
                long started = System.nanoTime();
                while (true) {
                    boolean left = false;
                    for (int t = 0; t < count; t++) {
                        String key = "t" + t;
                        for (ShardMerges.Outcome outcome : passes.drain(key)) {
                            if (outcome.failed()) {
                                throw new IllegalStateException("a merge of table " + t + " failed", outcome.error());
                            }
                            pending[t] -= outcome.result().mergedGenerations().size();
                        }
                        if (pending[t] > 0) {
                            left = true;
                            passes.submit(key, opened.get(t), SHARD, MergeTrigger.COUNT); // unless running
                        }
                    }
                    if (!left) {
                        break;
                    }
                    Thread.sleep(10); // the scheduler's tick
                }
                double seconds = (System.nanoTime() - started) / 1e9;
                return new double[] {seconds, BenchMerges.rounds(opened)};
            } finally {
                opened.forEach(RolloutTable::close); // before the capacity: a round in flight still prepares
            }
        }
    }
}
