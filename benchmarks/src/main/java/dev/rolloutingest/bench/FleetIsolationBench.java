package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.merge.Cooldown;
import dev.rolloutingest.merge.CooldownPolicy;
import dev.rolloutingest.merge.MergeMetrics;
import dev.rolloutingest.merge.ShardMerges;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.SharedByTables;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Isolation of broken tables on the shared merge fleet (the seed's #267): {@code tables} tables with the same backlog,
 * {@code broken} of them broken by hand (the data file of their base deleted, so every merge that updates its rows
 * fails), drained on one process's merge capacity. A driver asks for each table's passes through the merge-worker's
 * {@link ShardMerges} as its scheduler's tick does, with the scheduler's {@link CooldownPolicy}. Runs side by side, after a warm-up: the
 * healthy tables alone (the baseline, first and last: their mean), with the broken ones and cooldowns (3 failures), with
 * the broken ones and cooldowns off.
 * Printed: the healthy tables' drain rows/s, its ratio to the baseline, and the broken tables' failed passes.
 */
public final class FleetIsolationBench {
    private static final String TOPIC = "bench";
    private static final String SHARD = ShardId.of(TOPIC, 0);

    private final Path dir;
    private final int tables;
    private final int broken;
    private final int generations;
    private final int rows;
    private final int parallel;
    private final int threads;
    private final TableSettings settings = TableSettings.DEFAULTS
            .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
            .with(TableSettings.PENDING_MAX_GENERATIONS, 0);

    /**
     * @param parallel rollout.merge.tables.parallel of the fleet
     * @param threads rollout.merge.threads of the fleet
     */
    public FleetIsolationBench(Path dir, int tables, int broken, int generations, int rows, int parallel, int threads) {
        this.dir = dir;
        this.tables = tables;
        this.broken = broken;
        this.generations = generations;
        this.rows = rows;
        this.parallel = parallel;
        this.threads = threads;
    }

    private record Result(double seconds, long healthyRows, long brokenFailures, int brokenPending) {
        double rowsPerSecond() {
            return healthyRows / seconds;
        }
    }

    public void run() throws Exception {
        System.out.printf(
                "%d tables x 1 shard x %d pending generations x %,d rows (1 KiB payload), every generation updating the"
                        + " rows of the base; %d broken (their base's data file deleted); merge.max.generations 4,"
                        + " rollout.merge.tables.parallel %d, rollout.merge.threads %d, cooldown after 3 failures%n%n",
                tables, generations, rows, broken, parallel, threads);
        drain("warm-up", Math.min(tables, 5), 1, true); // JIT and lance-core warm before the timed runs
        Result first = drain("healthy-alone-1", tables - broken, 0, true);
        Result cooled = drain("broken-cooldowns", tables, broken, true);
        Result uncooled = drain("broken-no-cooldowns", tables, broken, false);
        Result last = drain("healthy-alone-2", tables - broken, 0, true);
        // The baseline is the mean of the runs without broken tables before and after: drift on a shared machine
        // shows as their difference.
        Result alone = new Result((first.seconds + last.seconds) / 2, first.healthyRows, 0, 0);
        System.out.println(
                "| run | healthy tables | broken tables | healthy drain | healthy rows/s | vs healthy alone (mean) |"
                        + " failed passes of the broken | broken left pending |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        print("healthy alone, first", tables - broken, 0, first, alone);
        print("broken, cooldowns on", tables - broken, broken, cooled, alone);
        print("broken, cooldowns off", tables - broken, broken, uncooled, alone);
        print("healthy alone, last", tables - broken, 0, last, alone);
        System.out.printf(
                "%nhealthy drain with %d broken tables and cooldowns: %.2f of the rate without them;"
                        + " with cooldowns off: %.2f%n",
                broken,
                cooled.rowsPerSecond() / alone.rowsPerSecond(),
                uncooled.rowsPerSecond() / alone.rowsPerSecond());
    }

    private static void print(String label, int healthy, int broken, Result r, Result baseline) {
        System.out.printf(
                "| %s | %d | %d | %.1f s | %,.0f | %.2f | %d | %d |%n",
                label,
                healthy,
                broken,
                r.seconds,
                r.rowsPerSecond(),
                r.rowsPerSecond() / baseline.rowsPerSecond(),
                r.brokenFailures,
                r.brokenPending);
    }

    private Result drain(String label, int count, int brokenCount, boolean cooldowns) throws Exception {
        Path root = dir.toAbsolutePath().resolve("isolation-" + label);
        FileTrees.deleteRecursively(root);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        CooldownPolicy policy = cooldowns
                ? new CooldownPolicy(3, 600, 3600, Duration.ofHours(1))
                : new CooldownPolicy(0, 0, 0, Duration.ofHours(1));
        List<RolloutTable> opened = new ArrayList<>();
        SharedByTables shared = BenchMerges.shared(settings, threads, parallel);
        ShardMerges passes = new ShardMerges(new MergeMetrics(meters), 4, result -> {});
        try {
            for (int t = 0; t < count; t++) {
                RolloutTable table = RolloutTable.createOrOpen(
                        TableLocation.local(root.resolve(String.format("t%03d", t))),
                        settings.with(TableSettings.MERGE_MAX_GENERATIONS, 4),
                        meters,
                        shared);
                opened.add(table);
                write(table, 0);
                table.merges().request(SHARD).get(10, TimeUnit.MINUTES); // the base, not the backlog
                if (t < brokenCount) {
                    deleteBaseData(table);
                }
                for (int g = 1; g <= generations; g++) {
                    write(table, g);
                }
            }
            int[] pending = new int[count];
            java.util.Arrays.fill(pending, generations);
            Cooldown[] records = new Cooldown[count];
            long failures = 0;
            long started = System.nanoTime();
            while (true) {
                long now = System.currentTimeMillis();
                boolean healthyLeft = false;
                for (int t = 0; t < count; t++) {
                    String key = "t" + t;
                    for (ShardMerges.Outcome outcome : passes.drain(key)) {
                        if (outcome.failed()) {
                            failures++;
                            records[t] = policy.onFailure(
                                    records[t], "merge", "t" + t, String.valueOf(outcome.error()), now);
                        } else {
                            records[t] = null;
                            pending[t] -= outcome.result().mergedGenerations().size();
                        }
                    }
                    if (t >= brokenCount && pending[t] > 0) {
                        healthyLeft = true;
                    }
                    if (pending[t] > 0 && !policy.gates(records[t], now)) {
                        passes.submit(key, opened.get(t), SHARD, MergeTrigger.COUNT); // unless running
                    }
                }
                if (!healthyLeft) {
                    break;
                }
                Thread.sleep(10); // the scheduler's tick
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            int brokenPending = 0;
            for (int t = 0; t < brokenCount; t++) {
                brokenPending += pending[t];
            }
            return new Result(seconds, (long) (count - brokenCount) * generations * rows, failures, brokenPending);
        } finally {
            opened.forEach(RolloutTable::close); // before the capacity: a round in flight still prepares
            shared.close();
        }
    }

    /** Generation {@code g}: the same {@code rows} keys each time, so every pass updates rows of the base. */
    private void write(RolloutTable table, int g) {
        RolloutGenerator generator = new RolloutGenerator("bench", 1024, 3);
        long first = (long) g * rows;
        List<RolloutRow> batch = new ArrayList<>(rows);
        for (long o = first; o < first + rows; o++) {
            Rollout rollout = generator.rollout(o % rows, (int) o);
            rollout.setRecordId("k-" + (o % rows));
            batch.add(new RolloutRow(rollout, 0, o, Instant.now()));
        }
        table.generations().write(TOPIC, 0, first, first + rows - 1, batch, rows * 1100L);
    }

    /** Breaks the table by hand: the data file its base's manifest names is deleted. */
    private static void deleteBaseData(RolloutTable table) throws IOException {
        Path data = Path.of(table.location().resolve("data"));
        try (Stream<Path> files = Files.list(data)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".lance")).toList()) {
                Files.delete(file);
            }
        }
    }
}
