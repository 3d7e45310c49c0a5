package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.Rollout;
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
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * Point lookups against the backlog and the number of shards, at two base sizes, with merge passes and
 * filtered lists at both sizes; on local disk or on the embedded S3 API (then also the object-store
 * operations a warm lookup costs). Prints Markdown; each figure next to its baseline from the same run.
 */
final class ReadBench {
    private static final String TOPIC = "bench";
    private static final String EXPERIMENT = "bench";

    private final Path dir;
    private final int lookups;
    private final long[] baseSizes;
    private final boolean s3;
    private final SplittableRandom random = new SplittableRandom(42);
    private final RolloutGenerator generator = new RolloutGenerator(EXPERIMENT, 64, 1);
    private long nextOffset;
    private SimpleMeterRegistry meters;

    ReadBench(Path dir, int lookups, long[] baseSizes, boolean s3) {
        this.dir = dir;
        this.lookups = lookups;
        this.baseSizes = baseSizes;
        this.s3 = s3;
    }

    void run() throws Exception {
        System.out.println(
                "| base rows | pending generations | get p50 | get p99 | vs 0 pending (p99) | generations opened per get"
                        + (s3 ? " | S3 operations per warm get" : "") + " |");
        System.out.println("|---|---|---|---|---|---|" + (s3 ? "---|" : ""));
        List<String> merges = new ArrayList<>();
        List<String> lists = new ArrayList<>();
        for (long baseRows : s3 ? new long[] {10_000} : baseSizes) {
            EmbeddedS3 server = s3 ? EmbeddedS3.start(dir.resolve("s3-" + baseRows), "bench") : null;
            try (RolloutTable table = open(baseRows, server)) {
                nextOffset = 0;
                buildBase(table, baseRows);
                LongSupplier operations = server == null ? () -> 0 : server::operations;
                double[] zero = measure(table, baseRows, operations);
                row(baseRows, "0", zero, zero, table, operations);
                pending(table, 0, 50, baseRows);
                row(baseRows, "50 on 1 shard", measure(table, baseRows, operations), zero, table, operations);
                pending(table, 0, 150, baseRows);
                row(baseRows, "200 on 1 shard", measure(table, baseRows, operations), zero, table, operations);
                mergeEverything(table, 1);
                for (int shard = 1; shard <= 64; shard++) {
                    pending(table, shard, 4, baseRows);
                }
                row(baseRows, "4 on each of 64 shards", measure(table, baseRows, operations), zero, table, operations);
                mergeEverything(table, 65);
                for (int shard = 65; shard < 65 + 256; shard++) {
                    pending(table, shard, 1, baseRows);
                }
                row(baseRows, "1 on each of 256 shards", measure(table, baseRows, operations), zero, table, operations);
                mergeEverything(table, 65 + 256);
                merges.add(mergePasses(table, baseRows));
                lists.add(lists(table, baseRows));
            } finally {
                if (server != null) {
                    server.close();
                }
            }
        }
        System.out.println();
        System.out.println(
                "| base rows | merge pass of 8 generations x 1,000 rows | read phase p50 | commit phase p50 |");
        System.out.println("|---|---|---|---|");
        merges.forEach(System.out::println);
        System.out.println();
        System.out.println("| base rows | list, experiment filter, page of 100 | p50 |");
        System.out.println("|---|---|---|");
        lists.forEach(System.out::println);
    }

    private RolloutTable open(long baseRows, EmbeddedS3 server) throws Exception {
        TableSettings settings = TableSettings.DEFAULTS
                .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                .with(TableSettings.PENDING_MAX_GENERATIONS, 0);
        meters = new SimpleMeterRegistry();
        if (server != null) {
            return RolloutTable.createOrOpen(
                    new TableLocation(server.uri("reads-" + baseRows), server.lanceStorageOptions()), settings, meters);
        }
        Path path = dir.toAbsolutePath().resolve("reads-" + baseRows);
        FileTrees.deleteRecursively(path);
        return RolloutTable.createOrOpen(TableLocation.local(path), settings, meters);
    }

    /** baseRows distinct keys in the base, written as 10k-row generations of partition 0 and merged. */
    private void buildBase(RolloutTable table, long baseRows) {
        long started = System.nanoTime();
        int perGeneration = 10_000;
        for (long first = 0; first < baseRows; first += perGeneration) {
            List<RolloutRow> rows = new ArrayList<>(perGeneration);
            for (long key = first; key < Math.min(baseRows, first + perGeneration); key++) {
                rows.add(row(key, 0));
            }
            write(table, 0, rows);
            if (table.generations().pending(ShardId.of(TOPIC, 0)).size() >= 10) {
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            }
        }
        table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
        table.maintenance().optimizeKeyIndex();
        System.err.printf("built a %,d-row base in %.1f s%n", baseRows, (System.nanoTime() - started) / 1e9);
    }

    private RolloutRow row(long key, int partition) {
        Rollout rollout = generator.rollout(key, (int) (nextOffset % 1000));
        return new RolloutRow(rollout, partition, nextOffset++, Instant.now());
    }

    private void write(RolloutTable table, int partition, List<RolloutRow> rows) {
        long first = rows.get(0).sourceOffset();
        long last = rows.get(rows.size() - 1).sourceOffset();
        table.generations().write(TOPIC, partition, first, last, rows, rows.size() * 200L);
    }

    /** Generations of 20 updates of random existing keys each. */
    private void pending(RolloutTable table, int partition, int generations, long baseRows) {
        for (int g = 0; g < generations; g++) {
            List<RolloutRow> rows = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                rows.add(row(random.nextLong(baseRows), partition));
            }
            write(table, partition, rows);
        }
    }

    private static void mergeEverything(RolloutTable table, int shards) {
        for (int partition = 0; partition < shards; partition++) {
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, partition)).limits(0, 0));
        }
        table.maintenance().optimizeKeyIndex();
    }

    /** Lookup latencies (ms) of random existing keys, after a warm-up; [0] and [1] = p50, p99; [2] = S3 ops per get. */
    private double[] measure(RolloutTable table, long baseRows, LongSupplier operations) {
        for (int i = 0; i < Math.min(50, lookups); i++) {
            table.get(RolloutGenerator.recordId(EXPERIMENT, random.nextLong(baseRows)))
                    .orElseThrow();
        }
        double[] ms = new double[lookups];
        long before = operations.getAsLong();
        double openedBefore = opened();
        for (int i = 0; i < lookups; i++) {
            String id = RolloutGenerator.recordId(EXPERIMENT, random.nextLong(baseRows));
            long t = System.nanoTime();
            table.get(id).orElseThrow(() -> new IllegalStateException("missing " + id));
            ms[i] = (System.nanoTime() - t) / 1e6;
        }
        double opsPerGet = (operations.getAsLong() - before) / (double) lookups;
        double openedPerGet = (opened() - openedBefore) / lookups;
        Arrays.sort(ms);
        return new double[] {
            ms[ms.length / 2],
            ms[(int) Math.min(ms.length - 1, Math.ceil(ms.length * 0.99) - 1)],
            opsPerGet,
            openedPerGet
        };
    }

    private double opened() {
        var counter =
                meters.find("rollout.read.generations").tag("result", "opened").counter();
        return counter == null ? 0 : counter.count();
    }

    private void row(
            long baseRows,
            String pending,
            double[] figures,
            double[] zero,
            RolloutTable table,
            LongSupplier operations) {
        System.out.printf(
                "| %,d | %s | %.2f ms | %.2f ms | %.2fx | %.2f%s |%n",
                baseRows,
                pending,
                figures[0],
                figures[1],
                figures[1] / zero[1],
                figures[3],
                s3 ? String.format(" | %.1f", figures[2]) : "");
    }

    private String mergePasses(RolloutTable table, long baseRows) {
        int shard = 400;
        double[] read = new double[5];
        double[] commit = new double[5];
        for (int pass = 0; pass < read.length; pass++) {
            for (int g = 0; g < 8; g++) {
                List<RolloutRow> rows = new ArrayList<>();
                for (int i = 0; i < 1000; i++) {
                    // half updates of existing keys, half new keys
                    rows.add(row(i % 2 == 0 ? random.nextLong(baseRows) : baseRows + nextOffset, shard));
                }
                write(table, shard, rows);
            }
            MergeResult result = table.merges()
                    .pass(MergeRequest.of(ShardId.of(TOPIC, shard)).limits(8, 0));
            read[pass] = result.readDuration().toNanos() / 1e6;
            commit[pass] = result.commitDuration().toNanos() / 1e6;
        }
        Arrays.sort(read);
        Arrays.sort(commit);
        return String.format(
                "| %,d | 8,000 rows | %.0f ms | %.0f ms |", baseRows, read[read.length / 2], commit[commit.length / 2]);
    }

    private String lists(RolloutTable table, long baseRows) {
        double[] ms = new double[9];
        for (int i = 0; i < ms.length; i++) {
            long t = System.nanoTime();
            if (table.list(ListQuery.all(100).withExperiment(EXPERIMENT)).size() != 100) {
                throw new IllegalStateException("a page of 100 expected");
            }
            ms[i] = (System.nanoTime() - t) / 1e6;
        }
        Arrays.sort(ms);
        return String.format("| %,d | experiment = %s | %.1f ms |", baseRows, EXPERIMENT, ms[ms.length / 2]);
    }
}
