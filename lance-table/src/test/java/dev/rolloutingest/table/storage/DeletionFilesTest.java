package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.FragmentMetadata;
import org.lance.Transaction;
import org.lance.WriteParams;
import org.lance.fragment.DeletionFileType;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.lance.operation.Update;

/**
 * Deletion files written here are lance-core's own to read, and the rows lance-core's files mark stay deleted in the
 * files written here: each hands over to the other, as an array and as a bitmap.
 */
class DeletionFilesTest {
    private static final Schema SCHEMA = new Schema(List.of(Field.nullable("n", new ArrowType.Int(32, true))));
    private static final int ROWS = 10_000;

    @Test
    void rowsMarkedHereAndByLanceCoreAddUpInEitherKindOfFileAndLanceCoreReadsThem() throws Exception {
        Path dir = TableFixtures.freshDir("deletion-files");
        try (BufferAllocator allocator = new RootAllocator();
                ObjectStore store = ObjectStores.open(TableLocation.local(dir))) {
            create(dir, allocator);
            byLance(dir, allocator, range(0, 100)); // lance-core's array, compressed
            FragmentMetadata ours = here(dir, allocator, store, range(100, 200));
            assertThat(ours.getDeletionFile().getFileType()).isEqualTo(DeletionFileType.ARRAY);
            assertThat(ours.getDeletionFile().getNumDeletedRows()).isEqualTo(200L);
            assertThat(live(dir, allocator)).isEqualTo(range(200, ROWS));

            byLance(dir, allocator, range(200, 5_200)); // lance-core reads this array, writes its bitmap
            assertThat(fragment(dir, allocator).getDeletionFile().getFileType()).isEqualTo(DeletionFileType.BITMAP);
            ours = here(dir, allocator, store, range(5_200, 5_300));
            assertThat(ours.getDeletionFile().getFileType()).isEqualTo(DeletionFileType.BITMAP);
            assertThat(ours.getDeletionFile().getNumDeletedRows()).isEqualTo(5_300L);
            assertThat(live(dir, allocator)).isEqualTo(range(5_300, ROWS));

            byLance(dir, allocator, List.of(5_300)); // and this bitmap
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(base.countRows()).isEqualTo(ROWS - 5_301);
            }
            assertThat(live(dir, allocator)).isEqualTo(range(5_301, ROWS));

            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(DeletionFiles.withDeleted(
                                store, allocator, base.version(), fragment(dir, allocator), range(5_000, ROWS)))
                        .as("no row left: the fragment goes")
                        .isNull();
            }
        }
    }

    @Test
    void aRowBeyondTheFragmentIsRefusedAndAnUnreadableFileIsLeftToLanceCore() throws Exception {
        Path dir = TableFixtures.freshDir("deletion-files-refused");
        try (BufferAllocator allocator = new RootAllocator();
                ObjectStore store = ObjectStores.open(TableLocation.local(dir))) {
            create(dir, allocator);
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThatThrownBy(() -> DeletionFiles.withDeleted(
                                store, allocator, base.version(), fragment(dir, allocator), List.of(ROWS)))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("row 10000 is not in fragment 0 of 10000 rows");
            }
            here(dir, allocator, store, range(0, 10));
            FragmentMetadata fragment = fragment(dir, allocator);
            store.put(DeletionFiles.path(0, fragment.getDeletionFile()), new byte[] {1, 2, 3});
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThatThrownBy(() ->
                                DeletionFiles.withDeleted(store, allocator, base.version(), fragment, range(10, 20)))
                        .isInstanceOf(DeletionFiles.Unreadable.class)
                        .hasMessageContaining("cannot be read");
            }
        }
    }

    private static List<Integer> range(int from, int to) {
        return IntStream.range(from, to).boxed().toList();
    }

    private static void create(Path dir, BufferAllocator allocator) throws Exception {
        try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
                ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
            IntVector n = (IntVector) root.getVector("n");
            n.allocateNew(ROWS);
            for (int i = 0; i < ROWS; i++) {
                n.set(i, i);
            }
            root.setRowCount(ROWS);
            Data.exportArrayStream(allocator, new BatchReader(allocator, root), stream);
            Dataset.create(allocator, stream, dir.toString(), new WriteParams.Builder().build())
                    .close();
        }
    }

    private static FragmentMetadata fragment(Path dir, BufferAllocator allocator) {
        try (Dataset base = Dataset.open(dir.toString(), allocator)) {
            return base.getFragments().get(0).metadata();
        }
    }

    private static void byLance(Path dir, BufferAllocator allocator, List<Integer> rows) {
        try (Dataset base = Dataset.open(dir.toString(), allocator)) {
            commit(base, base.getFragments().get(0).deleteRows(rows));
        }
    }

    private static FragmentMetadata here(Path dir, BufferAllocator allocator, ObjectStore store, List<Integer> rows) {
        try (Dataset base = Dataset.open(dir.toString(), allocator)) {
            FragmentMetadata after = DeletionFiles.withDeleted(
                    store, allocator, base.version(), base.getFragments().get(0).metadata(), rows);
            commit(base, after);
            return after;
        }
    }

    private static void commit(Dataset base, FragmentMetadata updated) {
        try (Transaction transaction = new Transaction.Builder()
                        .readVersion(base.version())
                        .operation(Update.builder()
                                .updatedFragments(List.of(updated))
                                .removedFragmentIds(List.of())
                                .newFragments(List.of())
                                .build())
                        .build();
                Dataset committed = base.commitTransaction(transaction)) {
            assertThat(committed.version()).isEqualTo(base.version() + 1);
        }
    }

    /** The live rows' values, in order, as lance-core scans them. */
    private static List<Integer> live(Path dir, BufferAllocator allocator) throws Exception {
        List<Integer> values = new ArrayList<>();
        try (Dataset base = Dataset.open(dir.toString(), allocator);
                LanceScanner scanner = base.newScan(
                        new ScanOptions.Builder().columns(List.of("n")).build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                IntVector n = (IntVector) reader.getVectorSchemaRoot().getVector("n");
                for (int i = 0; i < n.getValueCount(); i++) {
                    values.add(n.get(i));
                }
            }
        }
        return values;
    }
}
