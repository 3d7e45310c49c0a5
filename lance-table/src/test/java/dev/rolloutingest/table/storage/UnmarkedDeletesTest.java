package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.TableFixtures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.lance.Transaction;
import org.lance.WriteParams;
import org.lance.operation.Append;

/** What the newest data commit names as unmarked deletes, read once a version by a committer. */
class UnmarkedDeletesTest {
    private static final Schema SCHEMA = new Schema(List.of(Field.nullable("n", new ArrowType.Int(32, true))));

    @Test
    void theNewestDataCommitSaysWhichGenerationsHoldUnmarkedDeletesLessThoseTheWatermarksCover() throws Exception {
        Path dir = TableFixtures.freshDir("unmarked-deletes");
        try (BufferAllocator allocator = new RootAllocator()) {
            create(dir, allocator);
            commit(dir, allocator, dataCommit("s=5,t=2"));
            commit(dir, allocator, Map.of()); // marks, an index segment: no data commit
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(UnmarkedDeletes.at(base, Map.of())).containsOnly(Map.entry("s", 5L), Map.entry("t", 2L));
                assertThat(UnmarkedDeletes.at(base, Map.of("s", 5L))).containsOnly(Map.entry("t", 2L));
            }
        }
    }

    @Test
    void aCommitterReadsEachVersionOnceAndTakesItsOwnMarksCommitsAsTold() throws Exception {
        Path dir = TableFixtures.freshDir("unmarked-remembered");
        try (BufferAllocator allocator = new RootAllocator()) {
            create(dir, allocator);
            commit(dir, allocator, dataCommit("s=5"));
            UnmarkedDeletes.Remembered remembered = new UnmarkedDeletes.Remembered();
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(remembered.at(base, Map.of())).containsOnly(Map.entry("s", 5L));
            }
            // told that the next version is a marks' commit, it does not read it: here it was a data commit
            long next = commit(dir, allocator, dataCommit("s=7"));
            remembered.made(next, Map.of());
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(UnmarkedDeletes.at(base, Map.of())).containsOnly(Map.entry("s", 7L));
                assertThat(remembered.at(base, Map.of()))
                        .as("the versions it knows are not read again")
                        .containsOnly(Map.entry("s", 5L));
            }
        }
    }

    @Test
    void aTableMadeAnewAtTheSamePlaceIsReadAfresh() throws Exception {
        Path dir = TableFixtures.freshDir("unmarked-anew");
        try (BufferAllocator allocator = new RootAllocator()) {
            create(dir, allocator);
            commit(dir, allocator, dataCommit("s=5"));
            commit(dir, allocator, Map.of());
            UnmarkedDeletes.Remembered remembered = new UnmarkedDeletes.Remembered();
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(remembered.at(base, Map.of())).containsOnly(Map.entry("s", 5L));
            }
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
            create(dir, allocator);
            commit(dir, allocator, dataCommit("s=9")); // version 2 again, a version below the highest it saw
            try (Dataset base = Dataset.open(dir.toString(), allocator)) {
                assertThat(remembered.at(base, Map.of())).containsOnly(Map.entry("s", 9L));
            }
        }
    }

    private static Map<String, String> dataCommit(String unmarked) {
        return Map.of(UnmarkedDeletes.DATA_COMMIT, "1 generations of 1 shards", UnmarkedDeletes.PROPERTY, unmarked);
    }

    private static void create(Path dir, BufferAllocator allocator) throws Exception {
        try (VectorSchemaRoot root = rows(allocator);
                ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
            Data.exportArrayStream(allocator, new BatchReader(allocator, root), stream);
            Dataset.create(allocator, stream, dir.toString(), new WriteParams.Builder().build())
                    .close();
        }
    }

    /** One row appended in a commit with these properties; the version it made. */
    private static long commit(Path dir, BufferAllocator allocator, Map<String, String> properties) throws Exception {
        try (Dataset base = Dataset.open(dir.toString(), allocator);
                VectorSchemaRoot root = rows(allocator);
                ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
            Data.exportArrayStream(allocator, new BatchReader(allocator, root), stream);
            List<FragmentMetadata> fragments =
                    Fragment.create(dir.toString(), stream, new WriteParams.Builder().build());
            try (Transaction transaction = new Transaction.Builder()
                    .readVersion(base.version())
                    .operation(Append.builder().fragments(fragments).build())
                    .transactionProperties(properties)
                    .build()) {
                try (Dataset committed = base.commitTransaction(transaction)) {
                    return committed.version();
                }
            }
        }
    }

    private static VectorSchemaRoot rows(BufferAllocator allocator) {
        VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
        IntVector n = (IntVector) root.getVector("n");
        n.allocateNew(1);
        n.set(0, 1);
        root.setRowCount(1);
        return root;
    }
}
