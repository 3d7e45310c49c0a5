package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Merge capacity: a backlog of S shards x G generations x R rows drained through the merge-worker's
 * coordinator (rounds: plan, prepare on N threads, one commit), with N = 1, 2, 4, on the same machine and
 * the same backlog; rows/s, commits per merged generation, and this process's peak RSS.
 */
final class MergeBench {
    private static final String TOPIC = "bench";

    private final Path dir;
    private final int shards;
    private final int generations;
    private final int rows;
    private final int[] threads;
    private final int instances;
    private final TableSettings settings;

    /** @param scanJoinMaxBaseRows rollout.merge.scan.join.max.base.rows of the drains (0 = the index join) */
    MergeBench(
            Path dir, int shards, int generations, int rows, int[] threads, int instances, long scanJoinMaxBaseRows) {
        this.settings = TableSettings.DEFAULTS
                .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                .with(TableSettings.PENDING_MAX_GENERATIONS, 0)
                .with(TableSettings.MERGE_SCAN_JOIN_MAX_BASE_ROWS, scanJoinMaxBaseRows);
        this.instances = instances;
        this.dir = dir;
        this.shards = shards;
        this.generations = generations;
        this.rows = rows;
        this.threads = threads;
    }

    void run() throws Exception {
        System.out.printf(
                "backlog: %d shards x %d generations x %,d rows (1 KiB payload), merge.max.generations 8,"
                        + " merge join: %s%n%n",
                shards,
                generations,
                rows,
                settings.mergeScanJoinMaxBaseRows() == 0
                        ? "index"
                        : "scan up to " + settings.mergeScanJoinMaxBaseRows() + " base rows");
        System.out.println(
                "| merge threads | drain time | rows/s | vs 1 thread | rounds | commits | commits per merged generation |");
        System.out.println("|---|---|---|---|---|---|---|");
        double oneThread = 0;
        for (int n : threads) {
            Result r = drain(n);
            if (oneThread == 0) {
                oneThread = r.rowsPerSecond;
            }
            System.out.printf(
                    "| %d | %.1f s | %,.0f | %.2fx | %d | %d | %.3f |%n",
                    n,
                    r.seconds,
                    r.rowsPerSecond,
                    r.rowsPerSecond / oneThread,
                    r.rounds,
                    r.commits,
                    r.commits / (double) (shards * generations));
        }
        if (instances > 1) {
            System.out.printf(
                    "%n%d coordinators on the same table at once (as %d merge-worker instances would), each"
                            + " owning a share of the shards, %d thread(s) each:%n%n",
                    instances, instances, threads[0]);
            System.out.println("| committers | drain time | rows/s | rounds | commits | commit time |");
            System.out.println("|---|---|---|---|---|---|");
            for (int committers : new int[] {1, instances}) {
                Result r = drain(threads[0], committers);
                System.out.printf(
                        "| %d | %.1f s | %,.0f | %d | %d | %s |%n",
                        committers, r.seconds, r.rowsPerSecond, r.rounds, r.commits, r.commitTimes);
            }
        }
        System.out.printf("%npeak RSS of this process: %d MiB%n", peakRssMiB());
    }

    private record Result(double seconds, double rowsPerSecond, long rounds, long commits, String commitTimes) {}

    private Result drain(int threadCount) throws Exception {
        return drain(threadCount, 1);
    }

    /** Drains the backlog with {@code committers} table handles, each merging the shards p % committers == i. */
    private Result drain(int threadCount, int committers) throws Exception {
        Path path = dir.toAbsolutePath().resolve("merge-" + threadCount + "-" + committers);
        FileTrees.deleteRecursively(path);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableSettings withThreads = settings.with(TableSettings.MERGE_THREADS, threadCount);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(path), withThreads, meters)) {
            writeBacklog(table, shards, generations, rows);
            List<RolloutTable> tables = new ArrayList<>();
            long started = System.nanoTime();
            try {
                List<CompletableFuture<Void>> drains = new ArrayList<>();
                for (int c = 0; c < committers; c++) {
                    // Each committer its own table handle, as separate processes would have.
                    RolloutTable own =
                            c == 0 ? table : RolloutTable.open(TableLocation.local(path), withThreads, meters);
                    if (c > 0) {
                        tables.add(own);
                    }
                    for (int p = c; p < shards; p += committers) {
                        drains.add(Drains.shard(own, ShardId.of(TOPIC, p)));
                    }
                }
                CompletableFuture.allOf(drains.toArray(CompletableFuture[]::new))
                        .join();
            } finally {
                tables.forEach(RolloutTable::close);
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            var commitTimer = meters.find("rollout.merge.round.commit").timer();
            String commitTimes = commitTimer == null
                    ? ""
                    : String.format(
                            "mean %.0f / max %.0f ms",
                            commitTimer.mean(TimeUnit.MILLISECONDS), commitTimer.max(TimeUnit.MILLISECONDS));
            return new Result(
                    seconds,
                    shards * (double) generations * rows / seconds,
                    (long) meters.counter("rollout.merge.rounds").count(),
                    (long) meters.counter("rollout.merge.commits").count(),
                    commitTimes);
        }
    }

    /** shards x generations x rows, a quarter of each shard's ids rewritten by every later generation. */
    static void writeBacklog(RolloutTable table, int shards, int generations, int rows) {
        RolloutGenerator generator = new RolloutGenerator("bench", 1024, 3);
        for (int p = 0; p < shards; p++) {
            for (int g = 0; g < generations; g++) {
                long first = (long) g * rows;
                List<RolloutRow> batch = new ArrayList<>(rows);
                for (long o = first; o < first + rows; o++) {
                    Rollout rollout = generator.rollout(o % (rows * 4L), (int) o);
                    rollout.setRecordId("p" + p + "-" + (o % (rows * 4L)));
                    batch.add(new RolloutRow(rollout, p, o, Instant.now()));
                }
                table.generations().write(TOPIC, p, first, first + rows - 1, batch, rows * 1100L);
            }
        }
    }

    /**
     * Peak RSS of draining a backlog of each size, each drained by a fresh JVM (so nothing of writing the
     * backlog, or of an earlier drain, is counted). The heap is fixed and pre-touched, so what differs is
     * what grows with the backlog: native memory (Lance, Arrow) and anything retained.
     */
    void rssByBacklog(int[] backlogs) throws Exception {
        System.out.printf(
                "%npeak RSS draining a backlog of one shard (1,000-row generations, 2 merge threads), each in a"
                        + " fresh JVM with -Xms512m -Xmx512m -XX:+AlwaysPreTouch:%n%n");
        System.out.println("| pending generations | drain time | peak RSS | vs the smallest |");
        System.out.println("|---|---|---|---|");
        long smallest = 0;
        for (int generations : backlogs) {
            Path path = dir.toAbsolutePath().resolve("rss-" + generations);
            FileTrees.deleteRecursively(path);
            try (RolloutTable table =
                    RolloutTable.createOrOpen(TableLocation.local(path), settings, new SimpleMeterRegistry())) {
                writeBacklog(table, 1, generations, rows);
            }
            Path log = path.resolve("drain.log");
            try (ChildJvm drain = ChildJvm.start(
                    Drain.class,
                    List.of(path.toString(), String.valueOf(settings.mergeScanJoinMaxBaseRows())),
                    Map.of(),
                    log,
                    "-Xms512m",
                    "-Xmx512m",
                    "-XX:+AlwaysPreTouch")) {
                if (drain.waitFor(1800) != 0) {
                    throw new IllegalStateException("the drain failed; see " + log);
                }
            }
            String out = Files.readString(log);
            Matcher m = Pattern.compile("drained in ([0-9.]+) s, peak RSS (\\d+) MiB")
                    .matcher(out);
            if (!m.find()) {
                throw new IllegalStateException("no result in " + log);
            }
            long rss = Long.parseLong(m.group(2));
            smallest = smallest == 0 ? rss : smallest;
            System.out.printf(
                    "| %d | %s s | %d MiB | %.2fx |%n", generations, m.group(1), rss, rss / (double) smallest);
        }
    }

    /** Drains one table's backlog through its merges as the merge-worker does; prints time and peak RSS. */
    static final class Drain {
        public static void main(String[] args) throws Exception {
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            long started = System.nanoTime();
            try (RolloutTable table = RolloutTable.open(
                    TableLocation.local(Path.of(args[0])),
                    TableSettings.DEFAULTS
                            .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                            .with(TableSettings.PENDING_MAX_GENERATIONS, 0)
                            .with(TableSettings.MERGE_SCAN_JOIN_MAX_BASE_ROWS, Long.parseLong(args[1])),
                    meters)) {
                Drains.shard(table, ShardId.of(TOPIC, 0)).join();
            }
            System.out.printf(
                    "drained in %.1f s, peak RSS %d MiB%n", (System.nanoTime() - started) / 1e9, peakRssMiB());
        }
    }

    static long peakRssMiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return -1;
    }
}
