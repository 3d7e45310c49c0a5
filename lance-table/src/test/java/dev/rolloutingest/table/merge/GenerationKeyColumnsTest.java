package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationKeyColumns;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.ObjectStores;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.arrow.vector.util.ByteArrayReadableSeekableByteChannel;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.FragmentMetadata;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A sealed generation carries its key and order columns and its fragment in a file beside its dataset; a merge that
 * may adopt the generation reads that file instead of the dataset, and reads the dataset when the file is missing or
 * does not match the seal.
 */
class GenerationKeyColumnsTest {
    private static final TableSettings ADOPTING = TableSettings.DEFAULTS.with(TableSettings.MERGE_ADOPT_MIN_ROWS, 0);
    private static final Instant T0 = Instant.parse("2026-12-01T00:00:00Z");

    /** Rows for offsets [first, first + n) with ids key-(start..), the last {@code repeats} repeating earlier keys. */
    private static List<RolloutRow> rows(long first, int start, int n, int repeats) {
        RolloutGenerator generator = new RolloutGenerator("keys-file", 8, 0);
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Rollout rollout = generator.rollout(first + i, (int) first + i);
            rollout.setRecordId("key-" + (start + (i < n - repeats ? i : i - (n - repeats))));
            rows.add(new RolloutRow(rollout, 0, first + i, T0.plusSeconds(i)));
        }
        return rows;
    }

    private static SealedGeneration write(RolloutTable table, long first, int start, int n, int repeats) {
        return table.generations().write(TOPIC, 0, first, first + n - 1, rows(first, start, n, repeats), n * 100L);
    }

    @Test
    void theFileHoldsTheDatasetsKeysAndOrderColumnsRowForRowAndItsOneFragment() throws Exception {
        TableLocation location = TableLocation.local(freshDir("keys-file"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, new SimpleMeterRegistry());
                ObjectStore store = ObjectStores.open(location);
                BufferAllocator allocator = new RootAllocator()) {
            // 120 rows, 20 of them newer values of earlier keys: the dataset holds 100, newest per key
            SealedGeneration generation = write(table, 0, 0, 120, 20);
            List<String> datasetKeys = new ArrayList<>();
            List<Long> datasetOffsets = new ArrayList<>();
            FragmentMetadata datasetFragment;
            String datasetSchema;
            try (Dataset dataset = Dataset.open(location.resolve(generation.datasetPath()), allocator);
                    LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                            .columns(GenerationKeyColumns.COLUMNS)
                            .build());
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    collect(reader.getVectorSchemaRoot(), datasetKeys, datasetOffsets);
                }
                datasetFragment = GenerationKeyColumns.fragmentOf(dataset);
                datasetSchema = GenerationKeyColumns.schemaOf(dataset);
            }
            assertThat(datasetKeys).hasSize(100);

            try (GenerationKeyColumns.Read file = GenerationKeyColumns.read(store, generation, allocator)) {
                assertThat(file).isNotNull();
                List<String> keys = new ArrayList<>();
                List<Long> offsets = new ArrayList<>();
                collect(file.rows(), keys, offsets);
                assertThat(keys).isEqualTo(datasetKeys);
                assertThat(offsets).isEqualTo(datasetOffsets);
                assertThat(file.schema()).isEqualTo(datasetSchema);
                assertThat(file.fragment().getPhysicalRows()).isEqualTo(datasetFragment.getPhysicalRows());
                assertThat(file.fragment().getFiles()).isEqualTo(datasetFragment.getFiles());
            }
        }
    }

    @Test
    void aMergeAdoptsAGenerationFromItsKeyColumnsFileWithoutOpeningItsDataset() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("keys-file-adopt"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, meters);
                ObjectStore store = ObjectStores.open(location)) {
            List<RolloutRow> written = rows(0, 0, 100, 0);
            SealedGeneration generation = table.generations().write(TOPIC, 0, 0, 99, written, 100 * 100L);
            // the dataset's manifest gone: only the data file and the key columns file are left to merge from
            store.delete(generation.datasetPath() + "/_versions");

            assertThat(merge(table, shard).failed()).isEmpty();
            assertThat(TableFixtures.mergedRows(meters, MergePath.ADOPT)).isEqualTo(100);
            assertThat(baseRows(location)).hasSize(100);
            for (RolloutRow row : List.of(written.get(0), written.get(99))) {
                assertThat(table.get(row.rollout().getRecordId().toString())
                                .orElseThrow()
                                .rollout())
                        .isEqualTo(row.rollout());
            }
        }
    }

    @Test
    void aGenerationWhoseFileIsMissingOrDoesNotMatchItsSealOrContractIsReadFromItsDataset() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("keys-file-fallback"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, meters);
                ObjectStore store = ObjectStores.open(location)) {
            SealedGeneration missing = write(table, 0, 0, 100, 0); // key-0..99
            SealedGeneration wrong = write(table, 100, 1_000, 50, 0); // key-1000..1049
            SealedGeneration other = write(table, 150, 2_000, 80, 0); // key-2000..2079
            SealedGeneration retyped = write(table, 230, 3_000, 20, 0); // key-3000..3019
            store.delete(GenerationKeyColumns.path(missing));
            // another generation's file in its place: other keys, another row count than the seal's
            store.put(GenerationKeyColumns.path(wrong), store.get(GenerationKeyColumns.path(other)));
            // its own file with a column of another type: the names alone must not let it through
            store.put(
                    GenerationKeyColumns.path(retyped),
                    withOffsetsAsInts(store.get(GenerationKeyColumns.path(retyped))));

            assertThat(merge(table, shard).failed()).isEmpty();
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(250);
            assertThat(base)
                    .containsKeys("key-0", "key-99", "key-1000", "key-1049", "key-2000", "key-2079", "key-3019");
            assertThat(base.get("key-1049")).isEqualTo("0@149");
            assertThat(base.get("key-3019")).isEqualTo("0@249");
            assertThat(TableFixtures.mergedRows(meters, MergePath.ADOPT)).isEqualTo(250);
        }
    }

    /** The file again with its source_offset column as 32-bit ints: the right names, a type no merge reads. */
    private static byte[] withOffsetsAsInts(byte[] file) throws IOException {
        try (BufferAllocator allocator = new RootAllocator();
                ArrowFileReader reader =
                        new ArrowFileReader(new ByteArrayReadableSeekableByteChannel(file), allocator);
                IntVector offsets = new IntVector(RolloutSchema.SOURCE_OFFSET, allocator)) {
            reader.loadNextBatch();
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            BigIntVector original = (BigIntVector) root.getVector(RolloutSchema.SOURCE_OFFSET);
            offsets.allocateNew(root.getRowCount());
            for (int i = 0; i < root.getRowCount(); i++) {
                offsets.set(i, (int) original.get(i));
            }
            offsets.setValueCount(root.getRowCount());
            List<FieldVector> vectors = new ArrayList<>();
            for (FieldVector vector : root.getFieldVectors()) {
                vectors.add(vector.getName().equals(RolloutSchema.SOURCE_OFFSET) ? offsets : vector);
            }
            Schema schema = new Schema(
                    vectors.stream().map(FieldVector::getField).toList(),
                    root.getSchema().getCustomMetadata());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            try (ArrowFileWriter writer = new ArrowFileWriter(
                    new VectorSchemaRoot(schema, vectors, root.getRowCount()), null, Channels.newChannel(out))) {
                writer.start();
                writer.writeBatch();
                writer.end();
            }
            return out.toByteArray();
        }
    }

    /** One round of the shard's pending generations. */
    private static RoundResult merge(RolloutTable table, String shard) {
        return MergeSteps.commit(
                table,
                MergeSteps.plan(table, List.of(shard), 8, 0).stream()
                        .map(p -> MergeSteps.prepare(table, p))
                        .toList());
    }

    private static void collect(VectorSchemaRoot batch, List<String> keys, List<Long> offsets) {
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        BigIntVector offset = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
        for (int i = 0; i < batch.getRowCount(); i++) {
            keys.add(new String(ids.get(i), StandardCharsets.UTF_8));
            offsets.add(offset.get(i));
        }
    }
}
