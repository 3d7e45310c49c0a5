package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The table suite (the bench command's default): on one shard of a local table, the median time of a generation
 * write, of point lookups and lists against the number of pending generations, and of a merge pass's read and commit
 * phases, as one Markdown table.
 */
final class TableBench {
    private static final String TOPIC = "bench";

    private final Path dir;
    private final int repeat;

    /** @param repeat samples per measurement; the median is printed */
    TableBench(Path dir, int repeat) {
        this.dir = dir;
        this.repeat = repeat;
    }

    void run() throws Exception {
        System.out.println("| measurement | median | samples |");
        System.out.println("|---|---|---|");
        writes();
        reads();
        merges();
    }

    private RolloutTable fresh(String name) throws Exception {
        Path path = dir.toAbsolutePath().resolve(name);
        FileTrees.deleteRecursively(path);
        return RolloutTable.createOrOpen(
                TableLocation.local(path),
                TableSettings.DEFAULTS
                        .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                        .with(TableSettings.PENDING_MAX_GENERATIONS, 0),
                new SimpleMeterRegistry());
    }

    private static List<RolloutRow> rows(long first, int count, int keys, int payload) {
        RolloutGenerator generator = new RolloutGenerator("bench", payload, 1);
        List<RolloutRow> rows = new ArrayList<>(count);
        for (long o = first; o < first + count; o++) {
            rows.add(new RolloutRow(generator.rollout(o % keys, (int) o), 0, o, Instant.now()));
        }
        return rows;
    }

    private void writes() throws Exception {
        try (RolloutTable table = fresh("writes")) {
            double[] ms = new double[repeat];
            for (int i = 0; i < repeat; i++) {
                List<RolloutRow> batch = rows(i * 1000L, 1000, 1_000_000, 1024);
                long t = System.nanoTime();
                table.generations().write(TOPIC, 0, i * 1000L, i * 1000L + 999, batch, 1000L * 1100);
                ms[i] = (System.nanoTime() - t) / 1e6;
            }
            print("write one generation, 1,000 rows x 1 KiB payload", ms);
        }
    }

    private void reads() throws Exception {
        for (int pending : new int[] {0, 10, 50, 200}) {
            try (RolloutTable table = fresh("reads-" + pending)) {
                // 10,000 rows merged into the base, then `pending` generations of 50 rows on top.
                table.generations().write(TOPIC, 0, 0, 9_999, rows(0, 10_000, 10_000, 256), 10_000L * 300);
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
                long offset = 10_000;
                for (int g = 0; g < pending; g++) {
                    table.generations().write(TOPIC, 0, offset, offset + 49, rows(offset, 50, 10_000, 256), 50L * 300);
                    offset += 50;
                }
                double[] lookups = new double[repeat];
                for (int i = 0; i < repeat; i++) {
                    String id = RolloutGenerator.recordId("bench", (i * 7919L) % 10_000);
                    long t = System.nanoTime();
                    table.get(id).orElseThrow();
                    lookups[i] = (System.nanoTime() - t) / 1e6;
                }
                print("point lookup, 10k-row base + " + pending + " pending generations", lookups);
                double[] scans = new double[Math.max(3, repeat / 5)];
                for (int i = 0; i < scans.length; i++) {
                    long t = System.nanoTime();
                    table.list(ListQuery.all(10_000));
                    scans[i] = (System.nanoTime() - t) / 1e6;
                }
                print("list all 10k rows, + " + pending + " pending generations", scans);
            }
        }
    }

    private void merges() throws Exception {
        try (RolloutTable table = fresh("merges")) {
            String shard = ShardId.of(TOPIC, 0);
            double[] read = new double[repeat];
            double[] commit = new double[repeat];
            long offset = 0;
            for (int i = 0; i < repeat; i++) {
                for (int g = 0; g < 8; g++) {
                    table.generations()
                            .write(TOPIC, 0, offset, offset + 999, rows(offset, 1000, 20_000, 1024), 1000L * 1100);
                    offset += 1000;
                }
                MergeResult result = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
                read[i] = result.readDuration().toNanos() / 1e6;
                commit[i] = result.commitDuration().toNanos() / 1e6;
            }
            print("merge pass of 8 generations x 1,000 rows: read phase", read);
            print("merge pass of 8 generations x 1,000 rows: commit phase", commit);
        }
    }

    private static void print(String what, double[] samples) {
        double[] sorted = samples.clone();
        Arrays.sort(sorted);
        System.out.printf("| %s | %.1f ms | %d |%n", what, sorted[sorted.length / 2], sorted.length);
    }
}
