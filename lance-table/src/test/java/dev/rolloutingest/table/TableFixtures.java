package dev.rolloutingest.table;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergePath;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.BatchReader;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.WriteParams;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/** Builders shared by the table tests. */
public final class TableFixtures {
    public static final String TOPIC = "rollouts";

    private TableFixtures() {}

    public static Path freshDir(String name) {
        return Path.of("target", "tables", name + "-" + UUID.randomUUID()).toAbsolutePath();
    }

    public static RolloutTable localTable(String name, SimpleMeterRegistry meters) {
        return localTable(name, meters, TableSettings.DEFAULTS);
    }

    public static RolloutTable localTable(String name, SimpleMeterRegistry meters, TableSettings settings) {
        return RolloutTable.createOrOpen(TableLocation.local(freshDir(name)), settings, meters);
    }

    /** The ingest time the keyed rows below count from. */
    public static final Instant T0 = Instant.parse("2026-12-01T00:00:00Z");

    /** A value of key {@code id} at a partition's offset, ingested {@code seconds} after {@link #T0}. */
    public static RolloutRow put(RolloutGenerator generator, int partition, long offset, String id, long seconds) {
        Rollout rollout = generator.rollout(offset, (int) offset);
        rollout.setRecordId(id);
        return new RolloutRow(rollout, partition, offset, T0.plusSeconds(seconds));
    }

    /** A delete of key {@code id} at a partition's offset, ingested {@code seconds} after {@link #T0}. */
    public static RolloutRow delete(int partition, long offset, String id, long seconds) {
        Instant at = T0.plusSeconds(seconds);
        return new RolloutRow(Tombstones.of(id, at), partition, offset, at);
    }

    /** The rows (ascending offsets of one partition) as one generation. */
    public static void write(RolloutTable table, int partition, List<RolloutRow> rows) {
        long first = rows.get(0).sourceOffset();
        long last = rows.get(rows.size() - 1).sourceOffset();
        table.generations().write(TOPIC, partition, first, last, rows, rows.size() * 100L);
    }

    /** Rows for offsets [first, last] of a partition; record i gets id exp-(i % keys), version = offset. */
    public static List<RolloutRow> rows(int partition, long first, long last, int keys) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
        List<RolloutRow> rows = new ArrayList<>();
        for (long offset = first; offset <= last; offset++) {
            Rollout rollout = generator.rollout(offset % keys, (int) offset);
            rows.add(new RolloutRow(rollout, partition, offset, Instant.now()));
        }
        return rows;
    }

    public static SealedGeneration write(RolloutTable table, int partition, long first, long last, int keys) {
        return table.generations()
                .write(TOPIC, partition, first, last, rows(partition, first, last, keys), 100 * (last - first + 1));
    }

    /** record_id -> "partition@offset" of every base row, as lance-core reads it; fails on a key seen twice. */
    public static Map<String, String> baseRows(TableLocation location) throws Exception {
        return baseRows(location, null);
    }

    /** The same at a lance tag (null: the latest version), read by lance-core alone. */
    public static Map<String, String> baseRows(TableLocation location, String tag) throws Exception {
        Map<String, String> rows = new HashMap<>();
        List<String> repeated = new ArrayList<>();
        try (RootAllocator allocator = new RootAllocator();
                Dataset latest =
                        Dataset.open().allocator(allocator).uri(location.uri()).build();
                Dataset base = tag == null ? latest.checkoutVersion(latest.version()) : latest.checkoutTag(tag);
                LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of(
                                RolloutSchema.RECORD_ID, RolloutSchema.SOURCE_PARTITION, RolloutSchema.SOURCE_OFFSET))
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                IntVector partitions = (IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION);
                BigIntVector offsets = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    String id = new String(ids.get(i));
                    if (rows.put(id, partitions.get(i) + "@" + offsets.get(i)) != null) {
                        repeated.add(id);
                    }
                }
            }
        }
        assertThat(repeated).as("keys the base holds more than once").isEmpty();
        return rows;
    }

    /** The keys a stream hands over, in order, a delete as {@code key(deleted)}; closes the stream. */
    public static List<String> keys(dev.rolloutingest.table.reads.RowStream stream) throws Exception {
        List<String> keys = new ArrayList<>();
        try (stream) {
            while (stream.loadNextBatch()) {
                VectorSchemaRoot batch = stream.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                org.apache.arrow.vector.FieldVector deleted =
                        batch.getVector(dev.rolloutingest.table.reads.RowStream.DELETED);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    boolean delete = deleted != null && ((org.apache.arrow.vector.BitVector) deleted).get(i) == 1;
                    keys.add(new String(ids.get(i), java.nio.charset.StandardCharsets.UTF_8)
                            + (delete ? "(deleted)" : ""));
                }
            }
        }
        return keys;
    }

    /**
     * The deletes kept beside the base ({@code _deletes}), read by lance-core alone, each as {@code id=partition@offset}
     * (empty when none was ever merged); fails on a delete held twice.
     */
    public static List<String> deletesBeside(TableLocation location) throws Exception {
        List<String> deletes = new ArrayList<>();
        try (RootAllocator allocator = new RootAllocator()) {
            Dataset beside;
            try {
                beside = Dataset.open()
                        .allocator(allocator)
                        .uri(location.resolve("_deletes"))
                        .build();
            } catch (RuntimeException e) {
                return deletes; // never created: no delete was merged
            }
            try (beside;
                    LanceScanner scanner = beside.newScan(new ScanOptions.Builder()
                            .columns(List.of(
                                    RolloutSchema.RECORD_ID,
                                    RolloutSchema.EXPERIMENT,
                                    RolloutSchema.METADATA,
                                    RolloutSchema.SOURCE_PARTITION,
                                    RolloutSchema.SOURCE_OFFSET))
                            .build());
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                    for (int i = 0; i < batch.getRowCount(); i++) {
                        assertThat(Tombstones.is(batch, i))
                                .as("a row beside the base is a delete")
                                .isTrue();
                        deletes.add(new String(((VarCharVector) batch.getVector(RolloutSchema.RECORD_ID)).get(i)) + "="
                                + ((IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION)).get(i) + "@"
                                + ((BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET)).get(i));
                    }
                }
            }
        }
        assertThat(deletes).as("deletes held twice").doesNotHaveDuplicates();
        return deletes;
    }

    /**
     * The record_ids of the base's live rows (deletes left out: a row whose metadata holds {@link Tombstones#MARKER}),
     * read by lance-core alone at a tag (null: the latest version); fails on a key seen twice.
     */
    public static List<String> liveBaseKeys(TableLocation location, String tag) throws Exception {
        List<String> live = new ArrayList<>();
        List<String> repeated = new ArrayList<>();
        java.util.Set<String> seen = new java.util.HashSet<>();
        try (RootAllocator allocator = new RootAllocator();
                Dataset latest =
                        Dataset.open().allocator(allocator).uri(location.uri()).build();
                Dataset base = tag == null ? latest.checkoutVersion(latest.version()) : latest.checkoutTag(tag);
                LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.RECORD_ID, RolloutSchema.METADATA))
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                org.apache.arrow.vector.complex.ListVector metadata =
                        (org.apache.arrow.vector.complex.ListVector) batch.getVector(RolloutSchema.METADATA);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    String id = new String(ids.get(i));
                    if (!seen.add(id)) {
                        repeated.add(id);
                    }
                    Object entries = metadata.getObject(i);
                    boolean deleted = entries != null && entries.toString().contains(Tombstones.MARKER);
                    if (!deleted) {
                        live.add(id);
                    }
                }
            }
        }
        assertThat(repeated).as("keys the base holds more than once").isEmpty();
        return live;
    }

    /** Merged rows of a path, from a table's meters. */
    public static double mergedRows(SimpleMeterRegistry meters, MergePath path) {
        return meters.get("rollout.merge.rows")
                .tag("path", path.name().toLowerCase(Locale.ROOT))
                .counter()
                .count();
    }

    /** The base's latest version, read by lance-core alone. */
    public static long latestVersion(TableLocation location) throws Exception {
        try (RootAllocator allocator = new RootAllocator();
                Dataset latest =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            return latest.version();
        }
    }

    /** Rows appended to the base with lance-core alone, as a writer other than the merge would. */
    public static void appendWithLance(TableLocation location, List<RolloutRow> rows) throws Exception {
        try (RootAllocator allocator = new RootAllocator();
                VectorSchemaRoot root = ArrowRows.toRoot(allocator, rows);
                BatchReader reader = new BatchReader(allocator, root)) {
            Dataset.write()
                    .allocator(allocator)
                    .reader(reader)
                    .uri(location.uri())
                    .mode(WriteParams.WriteMode.APPEND)
                    .execute()
                    .close();
        }
    }

    /** An operator's restore of the base to an older version, with lance-core alone. */
    public static void restore(TableLocation location, long version) throws Exception {
        try (RootAllocator allocator = new RootAllocator();
                Dataset latest =
                        Dataset.open().allocator(allocator).uri(location.uri()).build();
                Dataset old = latest.checkoutVersion(version)) {
            old.restore();
        }
    }
}
