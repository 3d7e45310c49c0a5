package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.storage.BatchReader;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.lance.Dataset;
import org.lance.WriteParams;
import org.lance.ipc.ScanOptions;

/**
 * One generation's rows written by lance-core in each Lance file format version, alternating, and read back: what the
 * version the tables are created in (lance-core's default) costs each seal and each merge's write against the others.
 */
final class FileVersionBench {
    private static final int ROWS = 10_000;
    private static final int WARMUP = 2;

    private final Path dir;
    private final int repeat;
    private final int payloadBytes;
    private final List<String> versions;

    FileVersionBench(Path dir, int repeat, int payloadBytes, List<String> versions) {
        this.dir = dir;
        this.repeat = repeat;
        this.payloadBytes = payloadBytes;
        this.versions = versions;
    }

    void run() throws Exception {
        FileTrees.deleteRecursively(dir);
        try (BufferAllocator allocator = new RootAllocator();
                RolloutTable table = RolloutTable.createOrOpen(
                        TableLocation.local(dir.resolve("table")), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            List<VectorSchemaRoot> rows = generationRows(table, allocator);
            Map<String, List<Double>> writes = new LinkedHashMap<>();
            Map<String, List<Double>> scans = new LinkedHashMap<>();
            Map<String, List<Double>> takes = new LinkedHashMap<>();
            Map<String, String> written = new LinkedHashMap<>();
            Random random = new Random(7);
            for (int round = 0; round < WARMUP + repeat; round++) {
                for (String version : versions) {
                    String uri = dir.resolve("v" + version + "-" + round).toString();
                    long started = System.nanoTime();
                    try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
                        Data.exportArrayStream(allocator, new BatchReader(allocator, rows), stream);
                        WriteParams.Builder params = new WriteParams.Builder().withMode(WriteParams.WriteMode.CREATE);
                        if (!version.equals("default")) {
                            params.withDataStorageVersion(version);
                        }
                        try (Dataset created = Dataset.create(allocator, stream, uri, params.build())) {
                            written.put(version, created.getLanceFileFormatVersion());
                        }
                    }
                    double writeMs = (System.nanoTime() - started) / 1e6;
                    try (Dataset dataset = Dataset.open(uri, allocator)) {
                        started = System.nanoTime();
                        try (var scanner = dataset.newScan(new ScanOptions.Builder()
                                        .batchSize(2048)
                                        .build());
                                ArrowReader reader = scanner.scanBatches()) {
                            while (reader.loadNextBatch()) {
                                // every column read, as a merge reads a generation it does not adopt
                            }
                        }
                        double scanMs = (System.nanoTime() - started) / 1e6;
                        List<String> columns = dataset.getSchema().getFields().stream()
                                .map(Field::getName)
                                .toList();
                        started = System.nanoTime();
                        for (int take = 0; take < 50; take++) {
                            try (ArrowReader reader = dataset.take(List.of((long) random.nextInt(ROWS)), columns)) {
                                while (reader.loadNextBatch()) {
                                    // one row, every column, as a point read of a pending row
                                }
                            }
                        }
                        double takeMs = (System.nanoTime() - started) / 1e6;
                        if (round >= WARMUP) {
                            writes.computeIfAbsent(version, v -> new ArrayList<>())
                                    .add(writeMs);
                            scans.computeIfAbsent(version, v -> new ArrayList<>())
                                    .add(scanMs);
                            takes.computeIfAbsent(version, v -> new ArrayList<>())
                                    .add(takeMs);
                        }
                    }
                    FileTrees.deleteRecursively(Path.of(uri));
                }
            }
            rows.forEach(VectorSchemaRoot::close);
            System.out.printf(
                    "%,d rows of %d-byte payloads (one generation), written with Dataset.create and read back, the"
                            + " versions alternating; medians of %d rounds after %d for warm-up%n%n",
                    ROWS, payloadBytes, repeat, WARMUP);
            System.out.println(
                    "| version asked | written as | write ms | vs the first | full scan ms | 50 one-row takes ms |");
            System.out.println("|---|---|---|---|---|---|");
            double first = median(writes.get(versions.get(0)));
            for (String version : versions) {
                System.out.printf(
                        "| %s | %s | %.1f | %.2f | %.1f | %.1f |%n",
                        version,
                        written.get(version),
                        median(writes.get(version)),
                        median(writes.get(version)) / first,
                        median(scans.get(version)),
                        median(takes.get(version)));
            }
        }
    }

    /** A generation written through the table as the ingest app writes one, read back as Arrow batches. */
    private List<VectorSchemaRoot> generationRows(RolloutTable table, BufferAllocator allocator) throws Exception {
        RolloutGenerator generator = new RolloutGenerator("versions", payloadBytes, 3);
        List<RolloutRow> rows = new ArrayList<>();
        for (int offset = 0; offset < ROWS; offset++) {
            rows.add(new RolloutRow(generator.rollout(offset, 0), 0, offset, Instant.now()));
        }
        SealedGeneration generation = table.generations().write("versions", 0, 0, ROWS - 1, rows, 1000);
        List<VectorSchemaRoot> batches = new ArrayList<>();
        try (Dataset dataset = Dataset.open(table.location().resolve(generation.datasetPath()), allocator);
                var scanner = dataset.newScan(
                        new ScanOptions.Builder().batchSize(ROWS).build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot source = reader.getVectorSchemaRoot();
                VectorSchemaRoot copy = VectorSchemaRoot.create(source.getSchema(), allocator);
                for (int i = 0; i < source.getFieldVectors().size(); i++) {
                    source.getVector(i).makeTransferPair(copy.getVector(i)).transfer();
                }
                copy.setRowCount(source.getRowCount());
                batches.add(copy);
            }
        }
        return batches;
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        return sorted.get(sorted.size() / 2);
    }
}
