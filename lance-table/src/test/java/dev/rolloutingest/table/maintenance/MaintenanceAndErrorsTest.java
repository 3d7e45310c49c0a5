package dev.rolloutingest.table.maintenance;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.WriteParams;

class MaintenanceAndErrorsTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final String shard = ShardId.of(TOPIC, 0);

    @Test
    void gcDeletesOnlyMergedGenerationsAfterTheGracePeriod() throws Exception {
        try (RolloutTable table = localTable("gc", meters)) {
            SealedGeneration merged = write(table, 0, 0, 9, 10);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            SealedGeneration pending = write(table, 0, 10, 19, 10);
            assertThat(table.maintenance().collectGarbage(Duration.ofHours(1)).deletedGenerations())
                    .isZero();
            Path root = Path.of(table.location().uri());
            assertThat(root.resolve(merged.datasetPath())).exists();

            Thread.sleep(50);
            TableMaintenance.GcResult gc = table.maintenance().collectGarbage(Duration.ofMillis(10));
            assertThat(gc.deletedGenerations()).isEqualTo(1);
            assertThat(root.resolve(merged.datasetPath())).doesNotExist();
            assertThat(root.resolve(merged.sealPath())).doesNotExist();
            assertThat(root.resolve(pending.datasetPath())).exists();
            assertThat(table.get("exp-3").orElseThrow().sourceOffset()).isEqualTo(13);
            assertThat(table.countRows()).isEqualTo(10);
        }
    }

    @Test
    void gcRemovesOldBaseVersionsSoTheTableDoesNotOnlyGrow() throws Exception {
        try (RolloutTable table = localTable("gc-versions", meters)) {
            for (int i = 0; i < 5; i++) {
                write(table, 0, i * 10L, i * 10L + 9, 10);
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            }
            int before;
            try (Dataset base = Dataset.open(table.location().uri())) {
                before = base.listVersions().size();
            }
            Thread.sleep(100);
            TableMaintenance.GcResult gc = table.maintenance().collectGarbage(Duration.ofMillis(20));
            try (Dataset base = Dataset.open(table.location().uri())) {
                assertThat(base.listVersions().size()).isLessThan(before);
                assertThat(gc.oldBaseVersionsRemoved())
                        .isEqualTo(before - base.listVersions().size());
            }
            assertThat(table.countRows()).isEqualTo(10);
            assertThat(table.get("exp-4").orElseThrow().sourceOffset()).isEqualTo(44);
            write(table, 0, 50, 59, 10);
            assertThat(table.merges().pass(MergeRequest.of(shard).limits(8, 0)).mergedGenerations())
                    .containsExactly(60L);
        }
    }

    @Test
    void gcRemovesUnsealedFoldersBelowTheWatermarkOnly() throws Exception {
        try (RolloutTable table = localTable("gc-unsealed", meters)) {
            SealedGeneration a = write(table, 0, 0, 9, 10);
            Path root = Path.of(table.location().uri());
            // A fenced writer's half-finished generation below what will be merged, and one above.
            Path below = root.resolve("_mem_wal/" + shard + "/" + SealedGeneration.folderName(5, 0, 4));
            Path above = root.resolve("_mem_wal/" + shard + "/" + SealedGeneration.folderName(50, 40, 49));
            Files.createDirectories(below);
            Files.createDirectories(above);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            Thread.sleep(50);
            TableMaintenance.GcResult gc = table.maintenance().collectGarbage(Duration.ofMillis(10));
            assertThat(gc.deletedUnsealedFolders()).isEqualTo(1);
            assertThat(below).doesNotExist();
            assertThat(above).exists();
            assertThat(root.resolve(a.datasetPath())).doesNotExist();
        }
    }

    @Test
    void aGenerationWhoseFilesAreGoneFailsTheMergeWithATypedErrorNamingIt() throws Exception {
        try (RolloutTable table = localTable("poison", meters)) {
            SealedGeneration gone = write(table, 0, 0, 9, 10);
            FileTrees.deleteRecursively(Path.of(table.location().resolve(gone.datasetPath())));
            assertThatThrownBy(() -> table.merges().pass(MergeRequest.of(shard).limits(8, 0)))
                    .isInstanceOf(RolloutTableException.GenerationUnreadable.class)
                    .hasMessageContaining(shard)
                    .hasMessageContaining("generation 10")
                    .hasMessageContaining(table.location().uri());
            assertThat(table.generations().watermarks()).doesNotContainKey(shard);
        }
    }

    @Test
    void openingAMissingTableIsATypedError() {
        Path nowhere = freshDir("missing");
        assertThatThrownBy(() -> RolloutTable.open(TableLocation.local(nowhere), TableSettings.DEFAULTS, meters))
                .isInstanceOf(RolloutTableException.NotARolloutTable.class)
                .hasMessageContaining(nowhere.toString());
        assertThat(nowhere).doesNotExist();
    }

    @Test
    void openingADatasetWithAnotherSchemaSaysWhatDiffers() {
        Path dir = freshDir("other-schema");
        Schema other = new Schema(java.util.List.of(
                new Field("record_id", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null),
                new Field("score", FieldType.notNullable(new ArrowType.Int(64, true)), null)));
        try (RootAllocator allocator = new RootAllocator();
                Dataset ignored = Dataset.create(allocator, dir.toString(), other, new WriteParams.Builder().build())) {
            // created
        }
        assertThatThrownBy(() -> RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters))
                .isInstanceOf(RolloutTableException.SchemaMismatch.class)
                .hasMessageContaining("missing column experiment")
                .hasMessageContaining("unexpected column score")
                .hasMessageContaining("unenforced-primary-key");
    }

    @Test
    void appsStartingTogetherAllOpenTheTableTheyCreateOnce() throws Exception {
        for (int round = 0; round < 3; round++) {
            Path dir = freshDir("race");
            int apps = 6;
            java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(apps);
            List<java.util.concurrent.Future<Long>> opened = new java.util.ArrayList<>();
            for (int i = 0; i < apps; i++) {
                opened.add(pool.submit(() -> {
                    go.await();
                    try (RolloutTable table = RolloutTable.createOrOpen(
                            TableLocation.local(dir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                        return table.countBaseRows();
                    }
                }));
            }
            go.countDown();
            for (var f : opened) {
                assertThat(f.get(60, java.util.concurrent.TimeUnit.SECONDS)).isZero();
            }
            pool.shutdown();
            try (Dataset base = Dataset.open(dir.toString())) {
                assertThat(base.getIndexes())
                        .filteredOn(i -> i.name().equals("__lance_mem_wal"))
                        .hasSize(1);
            }
        }
    }

    @Test
    void reopeningATableKeepsItsDataAndMemWal() {
        Path dir = freshDir("reopen");
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters)) {
            write(table, 0, 0, 4, 5);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
        }
        try (RolloutTable again = RolloutTable.open(TableLocation.local(dir), TableSettings.DEFAULTS, meters)) {
            assertThat(again.countBaseRows()).isEqualTo(5);
            assertThat(again.generations().watermarks()).isEqualTo(Map.of(shard, 5L));
        }
    }
}
