package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.reads.RowStream;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.reads.TailCursor;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Bulk reads for training against a plain lance-core scan of the same base with the same projection, in one run
 * (the table's scan also reads the pending rows and hides the base rows they replace, which the plain scan cannot);
 * then a tail's lag from seal to delivery at a steady producer. Prints Markdown.
 *
 * <p>Over 300 lines because the scan pair and the tail run share one base and its generator; each is one method.
 */
final class ScanBench {
    /** What a trainer reads: ids, tokens, logprobs, reward, advantage, policy version. */
    static final List<String> TRAINING_COLUMNS = List.of(
            RolloutSchema.RECORD_ID,
            RolloutSchema.INPUT_TOKENS,
            RolloutSchema.OUTPUT_TOKENS,
            RolloutSchema.OUTPUT_LOGPROBS,
            RolloutSchema.REWARD,
            RolloutSchema.ADVANTAGE,
            RolloutSchema.POLICY_VERSION);

    static final String TOPIC = "bench";
    private static final String EXPERIMENT = "bench";

    private final Path dir;
    private final long baseRows;
    private final int pendingRows;
    private final int repeat;
    private final int payloadBytes;
    private final int tailSeconds;
    private final SplittableRandom random = new SplittableRandom(7);
    private long nextOffset;

    ScanBench(Path dir, long baseRows, int pendingRows, int repeat, int payloadBytes, int tailSeconds) {
        this.dir = dir;
        this.baseRows = baseRows;
        this.pendingRows = pendingRows;
        this.repeat = repeat;
        this.payloadBytes = payloadBytes;
        this.tailSeconds = tailSeconds;
    }

    void run() throws Exception {
        Path path = dir.toAbsolutePath().resolve("scan-" + baseRows);
        FileTrees.deleteRecursively(path);
        TableSettings settings = TableSettings.DEFAULTS
                .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                .with(TableSettings.READ_REFRESH_MS, 100L);
        RolloutGenerator generator = new RolloutGenerator(EXPERIMENT, payloadBytes, 1);
        try (RolloutTable table =
                RolloutTable.createOrOpen(TableLocation.local(path), settings, new SimpleMeterRegistry())) {
            fill(table, generator);
            System.out.printf(
                    "base %,d rows (payload %d bytes), %,d pending rows in %d generations; median of at least %d rounds"
                            + " (more for a short read: ~%.0f s of plain scans), the three reads alternating%n%n",
                    baseRows, payloadBytes, pendingRows, (pendingRows + 999) / 1000, repeat, MIN_MEASURED_MS / 1000);
            System.out.println("| projection | rounds | plain lance-core scan of the base | table scan (base + pending)"
                    + " | ratio | table scan written as Arrow IPC | ratio | rows |");
            System.out.println("|---|---|---|---|---|---|---|---|");
            compare(table, path, "training (7 columns)", TRAINING_COLUMNS);
            compare(table, path, "every column", RolloutSchema.allColumns());
            compare(table, path, "narrow (record_id, reward)", List.of(RolloutSchema.RECORD_ID, RolloutSchema.REWARD));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            compare(table, path, "training, nothing pending (all merged)", TRAINING_COLUMNS);
            tailLag(table, path, generator, settings);
        }
    }

    /** The base of {@code baseRows} keys, then the pending updates of random base keys. */
    void fill(RolloutTable table, RolloutGenerator generator) {
        buildBase(table, generator);
        // pending updates of random base keys: the scan must hide the base rows they replace
        for (int written = 0; written < pendingRows; written += 1000) {
            List<RolloutRow> rows = new ArrayList<>();
            for (int i = 0; i < Math.min(1000, pendingRows - written); i++) {
                rows.add(row(generator, random.nextLong(baseRows)));
            }
            write(table, rows);
        }
    }

    private void buildBase(RolloutTable table, RolloutGenerator generator) {
        long started = System.nanoTime();
        for (long first = 0; first < baseRows; first += 10_000) {
            List<RolloutRow> rows = new ArrayList<>(10_000);
            for (long key = first; key < Math.min(baseRows, first + 10_000); key++) {
                rows.add(row(generator, key));
            }
            write(table, rows);
            if (table.generations().pending(ShardId.of(TOPIC, 0)).size() >= 10) {
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            }
        }
        table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
        table.maintenance().compact(1_000_000);
        System.err.printf("built a %,d-row base in %.1f s%n", baseRows, (System.nanoTime() - started) / 1e9);
    }

    private RolloutRow row(RolloutGenerator generator, long key) {
        Rollout rollout = generator.rollout(key, (int) (nextOffset % 100_000));
        return new RolloutRow(rollout, 0, nextOffset++, Instant.now());
    }

    private SealTimes write(RolloutTable table, List<RolloutRow> rows) {
        long first = rows.get(0).sourceOffset();
        long last = rows.get(rows.size() - 1).sourceOffset();
        table.generations().write(TOPIC, 0, first, last, rows, rows.size() * (200L + payloadBytes));
        return new SealTimes(first, last, System.nanoTime());
    }

    private record SealTimes(long first, long last, long sealedNanos) {}

    /** Rounds of a short read are more: a median of five 50 ms scans on a shared machine moves by a third. */
    private static final double MIN_MEASURED_MS = 2_000;

    private static final int MAX_ROUNDS = 25;

    private void compare(RolloutTable table, Path path, String name, List<String> columns) throws Exception {
        long warm = System.nanoTime();
        plainScan(path, columns);
        double warmMs = (System.nanoTime() - warm) / 1e6;
        int rounds = (int) Math.max(repeat, Math.min(MAX_ROUNDS, Math.ceil(MIN_MEASURED_MS / warmMs)));
        double[] plain = new double[rounds];
        double[] scan = new double[rounds];
        double[] ipc = new double[rounds];
        long[] rows = new long[3];
        for (int i = -1; i < rounds; i++) { // the first round warms caches and is not counted
            long t = System.nanoTime();
            rows[0] = plainScan(path, columns);
            double a = (System.nanoTime() - t) / 1e6;
            t = System.nanoTime();
            rows[1] = tableScan(table, columns, null);
            double b = (System.nanoTime() - t) / 1e6;
            t = System.nanoTime();
            rows[2] = tableScan(table, columns, OutputStream.nullOutputStream());
            double c = (System.nanoTime() - t) / 1e6;
            if (i >= 0) {
                plain[i] = a;
                scan[i] = b;
                ipc[i] = c;
            }
        }
        double p = median(plain);
        double s = median(scan);
        double w = median(ipc);
        System.out.printf(
                "| %s | %d | %.0f ms | %.0f ms | %.2fx | %.0f ms | %.2fx | %,d / %,d |%n",
                name, rounds, p, s, s / p, w, w / p, rows[0], rows[1]);
    }

    /** What a trainer reading the base with lance-core alone does: one scan, the projection, batches of 4096. */
    static long plainScan(Path path, List<String> columns) throws Exception {
        long rows = 0;
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(path.toString()).build();
                LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(columns)
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                rows += reader.getVectorSchemaRoot().getRowCount();
            }
        }
        return rows;
    }

    private static long tableScan(RolloutTable table, List<String> columns, OutputStream ipc) throws Exception {
        try (RowStream stream = table.scan(ScanQuery.all().withColumns(columns), TOPIC)) {
            if (ipc == null) {
                long rows = 0;
                while (stream.loadNextBatch()) {
                    rows += stream.getVectorSchemaRoot().getRowCount();
                }
                return rows;
            }
            try (ArrowStreamWriter writer =
                    new ArrowStreamWriter(stream.getVectorSchemaRoot(), null, Channels.newChannel(ipc))) {
                writer.start();
                while (stream.loadNextBatch()) {
                    writer.writeBatch();
                }
                writer.end();
            }
            return stream.rowsRead();
        }
    }

    /**
     * A producer seals a 100-row generation every 100 ms and a merger folds the backlog every 2 s, in this process;
     * a trainer on a handle of its own (which sees seals within its read refresh, as another process would) tails
     * every 50 ms. Lag: from a generation's seal returning to its rows' tail answer having been read.
     */
    private void tailLag(RolloutTable writer, Path path, RolloutGenerator generator, TableSettings settings)
            throws Exception {
        Map<Long, Long> sealedAt = new ConcurrentHashMap<>(); // last offset of a generation -> seal time
        List<Double> lags = new ArrayList<>();
        AtomicBoolean producing = new AtomicBoolean(true);
        try (RolloutTable trainer = RolloutTable.open(TableLocation.local(path), settings, new SimpleMeterRegistry())) {
            TailCursor cursor;
            try (RowStream scan = trainer.scan(ScanQuery.all().withColumns(List.of(RolloutSchema.RECORD_ID)), TOPIC)) {
                while (scan.loadNextBatch()) {
                    // a trainer's first full read
                }
                cursor = scan.cursor();
            }
            Thread producer = new Thread(
                    () -> {
                        long lastMerge = System.nanoTime();
                        while (producing.get()) {
                            long started = System.nanoTime();
                            List<RolloutRow> rows = new ArrayList<>();
                            for (int i = 0; i < 100; i++) {
                                rows.add(row(generator, baseRows + nextOffset));
                            }
                            SealTimes sealed = write(writer, rows);
                            for (long o = sealed.first(); o <= sealed.last(); o++) {
                                sealedAt.put(o, sealed.sealedNanos());
                            }
                            if (System.nanoTime() - lastMerge > 2_000_000_000L) {
                                writer.merges()
                                        .pass(MergeRequest.of(ShardId.of(TOPIC, 0))
                                                .limits(0, 0));
                                lastMerge = System.nanoTime();
                            }
                            long wait = 100 - (System.nanoTime() - started) / 1_000_000;
                            if (wait > 0) {
                                try {
                                    Thread.sleep(wait);
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                        }
                    },
                    "producer");
            producer.start();
            long end = System.nanoTime() + tailSeconds * 1_000_000_000L;
            long delivered = 0;
            int polls = 0;
            while (System.nanoTime() < end) {
                try (RowStream tail = trainer.tail(
                        cursor,
                        TOPIC,
                        ScanQuery.all().withColumns(List.of(RolloutSchema.RECORD_ID, RolloutSchema.SOURCE_OFFSET)),
                        0)) {
                    List<Long> offsets = new ArrayList<>();
                    while (tail.loadNextBatch()) {
                        VectorSchemaRoot batch = tail.getVectorSchemaRoot();
                        BigIntVector offset = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
                        for (int i = 0; i < batch.getRowCount(); i++) {
                            offsets.add(offset.get(i));
                        }
                    }
                    long now = System.nanoTime();
                    for (long offset : offsets) {
                        Long at = sealedAt.get(offset);
                        if (at != null) {
                            lags.add((now - at) / 1e6);
                        }
                    }
                    delivered += offsets.size();
                    cursor = tail.cursor();
                }
                polls++;
                Thread.sleep(50);
            }
            producing.set(false);
            producer.join();
            double[] sorted =
                    lags.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            System.out.println();
            System.out.printf(
                    "tail lag, seal to delivery: 1,000 rows/s in 100-row seals, merges every 2 s, trainer polls every"
                            + " 50 ms with %s = %d ms, %d s: %,d rows delivered in %d polls%n%n",
                    TableSettings.READ_REFRESH_MS, settings.readRefreshMs(), tailSeconds, delivered, polls);
            System.out.println("| p50 | p99 | max |");
            System.out.println("|---|---|---|");
            System.out.printf(
                    "| %.0f ms | %.0f ms | %.0f ms |%n",
                    percentile(sorted, 0.5),
                    percentile(sorted, 0.99),
                    sorted.length == 0 ? 0 : sorted[sorted.length - 1]);
        }
    }

    private static double percentile(double[] sorted, double q) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[(int) Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)];
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
