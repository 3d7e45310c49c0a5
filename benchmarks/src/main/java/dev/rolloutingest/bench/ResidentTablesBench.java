package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Resident memory of a merge-worker that has served many tables, most of them idle now: in a fresh JVM per table count
 * (fixed heap, pre-touched, so what differs is what the tables keep), every table gets a generation, has it merged
 * through the merge capacity the catalog's tables share and answers lookups, as a worker sees over a day; then the process idles past the idle
 * release and its RSS and heap in use are read.
 */
public final class ResidentTablesBench {
    private static final String TOPIC = "bench";
    private static final String SHARD = ShardId.of(TOPIC, 0);
    private static final int ROWS = 200;

    private final Path dir;
    private final int[] tableCounts;
    private final String heap;
    private final long idleReleaseMs;

    public ResidentTablesBench(Path dir, int[] tableCounts, String heap, long idleReleaseMs) {
        this.dir = dir;
        this.tableCounts = tableCounts;
        this.heap = heap;
        this.idleReleaseMs = idleReleaseMs;
    }

    public void run() throws Exception {
        System.out.printf(
                "each table: one generation of %d rows (256 B payloads) merged, 20 lookups; then 20 s idle"
                        + " (rollout.tables.idle.release.ms %d, rollout.tables.memory.budget.bytes default);"
                        + " fresh JVM per count with -Xms%s -Xmx%s -XX:+AlwaysPreTouch%n%n",
                ROWS, idleReleaseMs, heap, heap);
        System.out.println("| tables | setup | RSS idle | heap used idle | threads | RSS per table over the first |");
        System.out.println("|---|---|---|---|---|---|");
        long firstRss = 0;
        int firstCount = 0;
        for (int count : tableCounts) {
            Path root = dir.toAbsolutePath().resolve("resident-" + count);
            FileTrees.deleteRecursively(root);
            Files.createDirectories(root);
            Path log = root.resolve("worker.log");
            try (ChildJvm worker = ChildJvm.start(
                    Worker.class,
                    List.of(root.toString(), String.valueOf(count), String.valueOf(idleReleaseMs)),
                    Map.of(),
                    log,
                    "-Xms" + heap,
                    "-Xmx" + heap,
                    "-XX:+AlwaysPreTouch")) {
                if (worker.waitFor(3600) != 0) {
                    throw new IllegalStateException("the worker failed; see " + log);
                }
            }
            Matcher m = Pattern.compile("setup ([0-9.]+) s, rss (\\d+) MiB, heap (\\d+) MiB, threads (\\d+)")
                    .matcher(Files.readString(log));
            if (!m.find()) {
                throw new IllegalStateException("no result in " + log);
            }
            long rss = Long.parseLong(m.group(2));
            String perTable = "";
            if (firstRss == 0) {
                firstRss = rss;
                firstCount = count;
            } else {
                perTable = String.format("%.2f MiB", (rss - firstRss) / (double) (count - firstCount));
            }
            System.out.printf(
                    "| %d | %s s | %d MiB | %s MiB | %s | %s |%n",
                    count, m.group(1), rss, m.group(3), m.group(4), perTable);
        }
    }

    /** The worker: many tables through one catalog, whose tables share one merge capacity, as MergeTables has them. */
    static final class Worker {
        public static void main(String[] args) throws Exception {
            Path root = Path.of(args[0]);
            int count = Integer.parseInt(args[1]);
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            // rollout.merge.threads.idle.stop.ms as short as it goes when tables are released
            long threadsIdleStopMs = Long.parseLong(args[2]) == 0 ? 60_000 : Math.max(1_000, Long.parseLong(args[2]));
            TableSettings settings = TableSettings.DEFAULTS
                    .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                    .with(TableSettings.PENDING_MAX_GENERATIONS, 0)
                    .with(TableSettings.TABLES_IDLE_RELEASE_MS, Long.parseLong(args[2]))
                    .with(TableSettings.MERGE_THREADS_IDLE_STOP_MS, threadsIdleStopMs);
            long started = System.nanoTime();
            List<CompletableFuture<MergeResult>> passes = new ArrayList<>();
            List<RolloutTable> tables = new ArrayList<>();
            try (TableCatalog catalog =
                    TableCatalog.under(TableLocation.local(root.resolve("tables")), settings, meters, count)) {
                RolloutGenerator generator = new RolloutGenerator("bench", 256, 3);
                for (int t = 0; t < count; t++) {
                    RolloutTable table = catalog.createOrOpen(String.format("t%04d", t));
                    List<RolloutRow> rows = new ArrayList<>(ROWS);
                    for (long o = 0; o < ROWS; o++) {
                        Rollout rollout = generator.rollout(o, (int) o);
                        rollout.setRecordId("t" + t + "-" + o);
                        rows.add(new RolloutRow(rollout, 0, o, Instant.now()));
                    }
                    table.generations().write(TOPIC, 0, 0, ROWS - 1, rows, ROWS * 300L);
                    tables.add(table);
                    passes.add(table.merges().request(SHARD));
                }
                for (int t = 0; t < count; t++) {
                    passes.get(t).join(); // a failed merge fails the bench
                    for (int k = 0; k < 20; k++) {
                        tables.get(t).get("t" + t + "-" + k * 7);
                    }
                }
                double setup = (System.nanoTime() - started) / 1e9;
                Thread.sleep(20_000); // idle: past any idle release
                System.gc();
                Thread.sleep(1_000);
                Runtime runtime = Runtime.getRuntime();
                long heapUsed = (runtime.totalMemory() - runtime.freeMemory()) >> 20;
                System.out.printf(
                        "setup %.1f s, rss %d MiB, heap %d MiB, threads %d%n",
                        setup,
                        rssMiB(),
                        heapUsed,
                        ManagementFactory.getThreadMXBean().getThreadCount());
            }
        }

        private static long rssMiB() throws Exception {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
                }
            }
            return -1;
        }
    }
}
