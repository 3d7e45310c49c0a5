package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.maintenance.KeyIndex;
import dev.rolloutingest.table.maintenance.MaintenanceSeams;
import dev.rolloutingest.table.maintenance.TableMaintenance;
import dev.rolloutingest.table.merge.MergeMemory;
import dev.rolloutingest.table.merge.MergePlan;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.merge.MergeSteps;
import dev.rolloutingest.table.merge.PreparedMerge;
import dev.rolloutingest.table.merge.RoundResult;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStores;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.arrow.vector.types.pojo.Field;
import org.junit.jupiter.api.Test;

/**
 * One test per lance-core 7.0.0 pitfall from docs: each fails (or aborts the JVM) when its guard is
 * removed from the table module.
 */
class LancePitfallsTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final String shard = ShardId.of(TOPIC, 0);

    private static RolloutRow row(String id, String experiment, long offset) {
        Rollout rollout = new RolloutGenerator(experiment, 4, 1).rollout(offset, (int) offset);
        rollout.setRecordId(id);
        rollout.setExperiment(experiment);
        return new RolloutRow(rollout, 0, offset, Instant.now());
    }

    @Test
    void duplicateKeysInsideOneBatchKeepTheHighestOffset() {
        try (RolloutTable table = localTable("dup-in-batch", meters)) {
            List<RolloutRow> batch =
                    List.of(row("k", "e", 0), row("other", "e", 1), row("k", "e", 2), row("k", "e", 3));
            SealedGeneration sealed = table.generations().write(TOPIC, 0, 0, 3, batch, 40);
            assertThat(sealed.rows()).isEqualTo(2);
            assertThat(table.get("k").orElseThrow().sourceOffset()).isEqualTo(3);
            assertThat(table.list(ListQuery.all(10)))
                    .extracting(RolloutRow::sourceOffset)
                    .containsExactlyInAnyOrder(1L, 3L);
        }
    }

    @Test
    void aKeyRewrittenAcrossGenerationsReadsItsNewestValue() {
        try (RolloutTable table = localTable("ascending", meters)) {
            for (long offset = 0; offset < 5; offset++) {
                table.generations().write(TOPIC, 0, offset, offset, List.of(row("k", "e" + offset, offset)), 10);
            }
            assertThat(table.get("k").orElseThrow().rollout().getExperiment()).isEqualTo("e4");
            assertThat(table.list(ListQuery.all(10)))
                    .singleElement()
                    .satisfies(r -> assertThat(r.rollout().getExperiment()).isEqualTo("e4"));
        }
    }

    @Test
    void aFilterNeverMatchesARowThatANewerGenerationReplaced() {
        try (RolloutTable table = localTable("filter-after-dedup", meters)) {
            table.generations().write(TOPIC, 0, 0, 1, List.of(row("k", "old-exp", 0), row("stays", "old-exp", 1)), 10);
            table.generations().write(TOPIC, 0, 2, 2, List.of(row("k", "new-exp", 2)), 10);
            assertThat(table.list(ListQuery.all(10).withExperiment("old-exp")))
                    .extracting(RolloutRow::recordId)
                    .containsExactly("stays");
            assertThat(table.list(ListQuery.all(10).withExperiment("new-exp")))
                    .extracting(RolloutRow::recordId)
                    .containsExactly("k");
        }
    }

    @Test
    void readsNeverOpenGenerationsAtOrBelowTheWatermark() throws IOException {
        try (RolloutTable table = localTable("skip-merged", meters)) {
            SealedGeneration first = write(table, 0, 0, 9, 10);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, 10, 14, 10);
            // The merged generation's files are gone (as after GC); its seal is still listed.
            FileTrees.deleteRecursively(Path.of(table.location().resolve(first.datasetPath())));
            assertThat(table.get("exp-3").orElseThrow().sourceOffset()).isEqualTo(13);
            assertThat(table.countRows()).isEqualTo(10);
        }
    }

    @Test
    void mergingTheSamePassTwiceMergesNothingTheSecondTime() {
        try (RolloutTable table = localTable("remerge", meters)) {
            write(table, 0, 0, 9, 5);
            write(table, 0, 10, 19, 5);
            MergeResult first = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(first.mergedGenerations()).containsExactly(10L, 20L);
            MergeResult again = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(again.mergedGenerations()).isEmpty();
            assertThat(again.newWatermark()).isEqualTo(20);
            assertThat(table.get("exp-4").orElseThrow().sourceOffset()).isEqualTo(19);
        }
    }

    @Test
    void oneMergeOfGenerationsSharingKeysIsNotAmbiguous() {
        try (RolloutTable table = localTable("ambiguous", meters)) {
            write(table, 0, 0, 4, 5);
            write(table, 0, 5, 9, 5);
            write(table, 0, 10, 14, 5);
            MergeResult result = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(result.mergedGenerations()).hasSize(3);
            assertThat(result.rows()).isEqualTo(5);
            assertThat(table.countBaseRows()).isEqualTo(5);
            assertThat(table.get("exp-2").orElseThrow().sourceOffset()).isEqualTo(12);
        }
    }

    @Test
    void generationsCarryTheBaseSchemaExactlySoPointLookupsDoNotAbort() {
        assertThat(RolloutSchema.SCHEMA.getCustomMetadata()).isNullOrEmpty();
        Field key = RolloutSchema.SCHEMA.findField(RolloutSchema.RECORD_ID);
        assertThat(key.getMetadata()).containsEntry(RolloutSchema.PRIMARY_KEY_METADATA, "true");
        try (RolloutTable table = localTable("exact-schema", meters)) {
            SealedGeneration sealed = write(table, 0, 0, 2, 3);
            try (org.lance.Dataset generation =
                    org.lance.Dataset.open(table.location().resolve(sealed.datasetPath()))) {
                assertThat(generation.getSchema().getCustomMetadata()).isNullOrEmpty();
                assertThat(RolloutSchema.differences(generation.getSchema())).isEmpty();
            }
            // A point lookup across base + generation: with a differing schema this aborts the JVM.
            assertThat(table.get("exp-1")).isPresent();
        }
    }

    /** Four generations of 10 rows, each merged alone: a base of four fragments, 40 keys. */
    private void mergeFourGenerations(RolloutTable table) {
        for (int i = 0; i < 4; i++) {
            write(table, 0, i * 10L, i * 10L + 9, 40);
            table.merges().pass(MergeRequest.of(shard).limits(1, 0));
        }
    }

    @Test
    void compactionWithMemWalKeepsReadsAndMergesWorking() {
        try (RolloutTable table = localTable("compact", meters)) {
            mergeFourGenerations(table);
            TableMaintenance.CompactionResult compacted = table.maintenance().compact(1_000_000);
            assertThat(compacted.fragmentsAfter()).isLessThan(compacted.fragmentsBefore());
            write(table, 0, 40, 49, 40);
            assertThat(table.get("exp-5").orElseThrow().sourceOffset()).isEqualTo(45);
            assertThat(table.merges().pass(MergeRequest.of(shard).limits(8, 0)).mergedGenerations())
                    .containsExactly(50L);
            assertThat(table.countBaseRows()).isEqualTo(40);
            assertThat(table.generations().watermarks()).containsEntry(shard, 50L);
        }
    }

    @Test
    void aCompactionLeavesNoRowRemappingForLaterCommitsToLoad() {
        try (RolloutTable table = localTable("compact-remapping", meters)) {
            mergeFourGenerations(table);
            List<String> during = new ArrayList<>();
            TableSeams.compact(table, 1_000_000, () -> {}, () -> during.addAll(indexNames(table)));
            // lance-core 7.0.0 keeps a deferred-remap compaction's row remapping as an index, reads it whole on every
            // commit and index listing, and never trims it.
            assertThat(during).as("before the key index is rebuilt").contains("__lance_frag_reuse");
            assertThat(indexNames(table))
                    .as("after the rebuild")
                    .contains(KeyIndex.NAME)
                    .doesNotContain("__lance_frag_reuse");
            for (int i = 0; i < 40; i += 3) {
                assertThat(table.get("exp-" + i)).as("exp-%d", i).isPresent();
            }
            write(table, 0, 40, 49, 40);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(table.countBaseRows()).isEqualTo(40);
        }
    }

    @Test
    void aRemappingThatAnIndexBuiltBeforeItsCompactionCommittedStillNeedsIsKept() {
        try (RolloutTable table = localTable("compact-remapping-race", meters)) {
            mergeFourGenerations(table);
            LanceIo lance = TableSeams.mergeRound(table).lance();
            List<String> afterEarlyDrop = new ArrayList<>();
            List<Boolean> upkeepRebuilt = new ArrayList<>();
            TableSeams.compact(
                    table,
                    1_000_000,
                    () -> {
                        // after the compaction read its version: a merge commits, then the whole index is built from
                        // the version after it, still without the compaction, which then commits (lance lets both land)
                        write(table, 0, 40, 49, 40);
                        table.merges().pass(MergeRequest.of(shard).limits(8, 0));
                        try (org.apache.arrow.memory.RootAllocator allocator =
                                        new org.apache.arrow.memory.RootAllocator();
                                org.lance.Dataset base = org.lance.Dataset.open()
                                        .allocator(allocator)
                                        .uri(table.location().uri())
                                        .build()) {
                            KeyIndex.create(base, true);
                        }
                    },
                    () -> {
                        // the compaction committed; the upkeep drops what it can before the compaction's own rebuild
                        MaintenanceSeams.dropRemapping(lance);
                        afterEarlyDrop.addAll(indexNames(table));
                        upkeepRebuilt.add(table.maintenance().optimizeKeyIndex().rebuilt());
                    });
            assertThat(afterEarlyDrop)
                    .as("the index built before the compaction committed still needs the remapping")
                    .contains("__lance_frag_reuse");
            assertThat(upkeepRebuilt).as("the upkeep rebuilds that index").containsExactly(true);
            assertThat(indexNames(table)).as("after the rebuild").doesNotContain("__lance_frag_reuse");
            for (int i = 0; i < 40; i += 3) {
                assertThat(table.get("exp-" + i)).as("exp-%d", i).isPresent();
            }
            assertThat(table.get("exp-5").orElseThrow().sourceOffset()).isEqualTo(45);
        }
    }

    private static List<String> indexNames(RolloutTable table) {
        try (org.apache.arrow.memory.RootAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                org.lance.Dataset base = org.lance.Dataset.open()
                        .allocator(allocator)
                        .uri(table.location().uri())
                        .build()) {
            return base.getIndexes().stream().map(org.lance.index.Index::name).toList();
        }
    }

    @Test
    void aCompactionWhoseIndexRebuildAnotherWriterPreemptsStillCompletes() {
        try (RolloutTable table = localTable("compact-race", meters)) {
            mergeFourGenerations(table);
            // The merge-worker's index upkeep sees the compaction too and rebuilds the index first: lance-core then
            // refuses the compaction's own CreateIndex as a retryable conflict.
            List<TableMaintenance.IndexResult> other = new ArrayList<>();
            TableMaintenance.CompactionResult compacted = TableSeams.compact(
                    table,
                    1_000_000,
                    () -> {},
                    () -> other.add(table.maintenance().optimizeKeyIndex()));
            assertThat(other).singleElement().satisfies(r -> assertThat(r.rebuilt())
                    .isTrue());
            assertThat(compacted.fragmentsAfter()).isLessThan(compacted.fragmentsBefore());
            assertThat(table.maintenance().optimizeKeyIndex().rebuilt())
                    .as("rebuilt again")
                    .isFalse();
            assertThat(table.get("exp-5").orElseThrow().sourceOffset()).isEqualTo(5);
            assertThat(table.countBaseRows()).isEqualTo(40);
        }
    }

    @Test
    void malformedShardIdsAndGenerationNumbersFailBeforeReachingLance() {
        try (RolloutTable table = localTable("ids", meters)) {
            assertThatThrownBy(
                            () -> table.merges().pass(MergeRequest.of("Shard-0").limits(8, 0)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("lowercase hyphenated UUID");
            assertThatThrownBy(() -> table.merges()
                            .pass(MergeRequest.of(ShardId.of(TOPIC, 0).toUpperCase())
                                    .limits(8, 0)))
                    .isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(ShardId.of("rollouts", 3)).matches("[0-9a-f-]{36}").isEqualTo(ShardId.of("rollouts", 3));
        assertThatThrownBy(() -> SealedGeneration.of(TOPIC, 0, 0, Long.MAX_VALUE, 1, 1, Instant.now()))
                .isInstanceOf(ArithmeticException.class);
        assertThatThrownBy(() -> new SealedGeneration(ShardId.of(TOPIC, 0), -5, TOPIC, 0, 0, 3, 1, 1, Instant.now()))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aReplayedGenerationIsAcceptedAndAConflictingOneIsRefused() throws IOException {
        try (RolloutTable table = localTable("replay", meters)) {
            SealedGeneration first = write(table, 0, 0, 9, 10);
            SealedGeneration replay = write(table, 0, 0, 9, 10);
            assertThat(replay).isEqualTo(first);
            assertThat(table.countRows()).isEqualTo(10);
            // Same generation number, narrower range (a fenced owner's batch): both exist, the wider is read.
            table.generations().write(TOPIC, 0, 5, 9, rows(0, 5, 9, 10), 10);
            assertThat(table.generations().pending(shard)).singleElement().satisfies(g -> assertThat(g.firstOffset())
                    .isZero());
            assertThat(table.countRows()).isEqualTo(10);
            // Same folder, different content: refused.
            assertThatThrownBy(() -> table.generations().write(TOPIC, 0, 0, 9, rows(0, 0, 9, 3), 10))
                    .isInstanceOf(RolloutTableException.GenerationConflict.class)
                    .hasMessageContaining(shard);
            // A crash between dataset and seal: the replay adopts the whole dataset and seals it.
            SealedGeneration second = write(table, 0, 10, 19, 10);
            Files.delete(Path.of(table.location().resolve(second.sealPath())));
            assertThat(table.generations().pending(shard)).hasSize(1);
            write(table, 0, 10, 19, 10);
            assertThat(table.generations().pending(shard)).hasSize(2);
            assertThat(table.countRows()).isEqualTo(10);
            assertThat(table.get("exp-0").orElseThrow().sourceOffset()).isEqualTo(10);
        }
    }

    @Test
    void nothingInTheProjectUsesShardWriterWhichHangsWhenFenced() throws IOException {
        Path classes = Path.of("target", "classes");
        List<Path> offenders = new ArrayList<>();
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                if (new String(Files.readAllBytes(file), java.nio.charset.StandardCharsets.ISO_8859_1)
                        .contains("org/lance/memwal/ShardWriter")) {
                    offenders.add(file);
                }
            }
        }
        assertThat(offenders)
                .as("generations are written with Dataset.write, never ShardWriter")
                .isEmpty();
    }

    @Test
    void optimizeIndicesFailsOnASegmentedKeyIndexSoNothingInTheProjectCallsIt() throws IOException {
        try (RolloutTable table = localTable("segmented", meters)) {
            for (long g = 0; g < 2; g++) {
                table.generations().write(TOPIC, 0, g, g, List.of(row("seg-" + g, "exp", g)), 100);
                table.merges().pass(MergeRequest.of(shard).limits(0, 0));
                table.maintenance().optimizeKeyIndex();
            }
            table.generations().write(TOPIC, 0, 2, 2, List.of(row("seg-2", "exp", 2)), 100);
            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            try (org.apache.arrow.memory.RootAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                    org.lance.Dataset base = org.lance.Dataset.open()
                            .allocator(allocator)
                            .uri(table.location().uri())
                            .build()) {
                assertThat(base.getIndexes().stream().filter(i -> KeyIndex.NAME.equals(i.name())))
                        .hasSize(2);
                assertThatThrownBy(() -> base.optimizeIndices(org.lance.index.OptimizeOptions.builder()
                                .indexNames(List.of(KeyIndex.NAME))
                                .build()))
                        .hasMessageContaining("does not exist");
            }
            assertThat(table.maintenance().optimizeKeyIndex().segments()).isEqualTo(3);
            assertThat(table.get("seg-2")).isPresent();
        }
        try (Stream<Path> sources = Files.walk(Path.of("src/main/java"))) {
            for (Path source :
                    sources.filter(p -> p.toString().endsWith(".java")).toList()) {
                assertThat(Files.readString(source)).as(source.toString()).doesNotContain(".optimizeIndices(");
            }
        }
    }

    @Test
    void payloadsArePlainLargeBinaryAndRoundTripThroughLsmReadsAndMerges() {
        Field payload = RolloutSchema.SCHEMA.findField(RolloutSchema.BINARY_PAYLOAD);
        assertThat(payload.getMetadata()).doesNotContainKey("lance-encoding:blob");
        try (RolloutTable table = localTable("blob", meters)) {
            Rollout big = new RolloutGenerator("blob", 1 << 20, 9).rollout(0, 0);
            RolloutRow row = new RolloutRow(big, 0, 0, Instant.now());
            table.generations().write(TOPIC, 0, 0, 0, List.of(row), 1 << 20);
            assertThat(table.get(big.getRecordId()).orElseThrow().rollout().getBinaryPayload())
                    .isEqualTo(big.getBinaryPayload());
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(table.get(big.getRecordId()).orElseThrow().rollout().getBinaryPayload())
                    .isEqualTo(big.getBinaryPayload());
            assertThat(table.list(ListQuery.all(1)).get(0).rollout().getBinaryPayload())
                    .isNull();
            assertThat(table.list(ListQuery.all(1).withPayload())
                            .get(0)
                            .rollout()
                            .getBinaryPayload())
                    .isEqualTo(big.getBinaryPayload());
        }
    }

    /** A generation of {@code rows} rows of 512-byte payloads on a partition, ids <prefix><partition>-<offset>. */
    private static void generation(RolloutTable table, int partition, long firstOffset, int rows, String prefix) {
        RolloutGenerator generator = new RolloutGenerator("pool", 512, partition);
        List<RolloutRow> batch = new ArrayList<>(rows);
        for (long offset = firstOffset; offset < firstOffset + rows; offset++) {
            Rollout rollout = generator.rollout(offset, 0);
            rollout.setRecordId(prefix + partition + "-" + offset);
            batch.add(new RolloutRow(rollout, partition, offset, Instant.now()));
        }
        table.generations().write(TOPIC, partition, firstOffset, firstOffset + rows - 1, batch, rows * 600L);
    }

    @Test
    void aRoundLargerThanLanceMergeMemoryPoolIsCommittedInPiecesThatFitIt() {
        // On an indexed base lance-core's merge-insert collects its whole source into a hash join inside a
        // 100 MiB pool it cannot spill: two shards of 80,000 rows (~62 MiB each) fail as one commit ("Resources
        // exhausted ... HashJoinInput"), so the round is cut into commits that fit. The index join is the one
        // bounded by the pool, so this table always takes it, and joins every row (new keys are otherwise
        // appended, outside the pool).
        try (RolloutTable table = localTable(
                "pool",
                meters,
                TableSettings.DEFAULTS
                        .with(TableSettings.MERGE_SCAN_JOIN_MAX_BASE_ROWS, 0)
                        .with(TableSettings.MERGE_APPEND_NEW_KEYS, false))) {
            List<String> shards = List.of(ShardId.of(TOPIC, 0), ShardId.of(TOPIC, 1));
            for (int p = 0; p < 2; p++) {
                generation(table, p, 0, 1_000, "base-");
                table.merges().pass(MergeRequest.of(shards.get(p)).limits(8, 0));
            }
            table.maintenance().optimizeKeyIndex();
            for (int p = 0; p < 2; p++) {
                generation(table, p, 1_000, 80_000, "new-");
            }
            List<PreparedMerge> prepared = new ArrayList<>();
            for (MergePlan plan : MergeSteps.plan(table, shards, 8, 0)) {
                prepared.add(MergeSteps.prepare(table, plan));
            }
            assertThat(prepared.stream().mapToLong(PreparedMerge::memoryBytes).sum())
                    .isGreaterThan(MergeMemory.DEFAULT_POOL_BYTES);
            RoundResult round = MergeSteps.commit(table, prepared);
            assertThat(round.failed()).isEmpty();
            assertThat(round.commits()).isEqualTo(2); // not a failed commit of both, then one per half
            assertThat(table.countBaseRows()).isEqualTo(162_000);
            shards.forEach(
                    s -> assertThat(table.generations().watermarks().get(s)).isEqualTo(81_000L));
        }
    }

    /**
     * A watermark is the higher of the base's and the mark's: a commit that marks a generation another committer
     * marked already, or a lower one, from an older version, changes nothing (refused as read from before the other
     * marks, it reads them and tries again).
     */
    @Test
    void aStaleOrLowerMarkNeverMovesAWatermarkBack() {
        try (RolloutTable table = localTable("marks-max", meters)) {
            write(table, 1, 0, 9, 100);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            LanceIo lance = TableSeams.mergeRound(table).lance();
            try (org.lance.Dataset stale = lance.openBase()) {
                mark(lance, lance.openBase(), 30);
                mark(lance, stale, 10); // from the version before, a lower generation
                assertThat(table.generations().watermarks()).containsEntry(shard, 30L);
                mark(lance, lance.openBase(), 20);
                assertThat(table.generations().watermarks()).containsEntry(shard, 30L);
            }
        }
    }

    /**
     * The marks' fence: lance-core 7.0.0 refuses a {@code CreateIndex} that replaces the MemWAL index when another
     * one replaced it after the read version (a retryable conflict), so two marks' commits never both land from one
     * read, the second undoing the first's marks.
     */
    @Test
    void aMemWalIndexReplacedAfterTheReadVersionRefusesAnotherReplacement() {
        try (RolloutTable table = localTable("marks-fence", meters)) {
            write(table, 0, 0, 9, 100);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            LanceIo lance = TableSeams.mergeRound(table).lance();
            try (org.lance.Dataset first = lance.openBase();
                    org.lance.Dataset second = lance.openBase()) {
                org.lance.index.Index memWal = first.getIndexes().stream()
                        .filter(i -> MemWalWatermarks.INDEX_NAME.equals(i.name()))
                        .findFirst()
                        .orElseThrow();
                replaceMemWalIndex(first, memWal);
                assertThatThrownBy(() -> replaceMemWalIndex(second, memWal))
                        .satisfies(e -> assertThat(FencedCommit.isPreempted((RuntimeException) e))
                                .as(e.getMessage())
                                .isTrue());
            }
        }
    }

    private static void replaceMemWalIndex(org.lance.Dataset base, org.lance.index.Index memWal) {
        org.lance.index.Index replacement = org.lance.index.Index.builder()
                .uuid(java.util.UUID.randomUUID())
                .name(memWal.name())
                .fields(List.of())
                .datasetVersion(base.version())
                .indexVersion(memWal.indexVersion())
                .indexDetails(memWal.indexDetails().orElseThrow())
                .build();
        try (org.lance.Transaction replace = new org.lance.Transaction.Builder()
                        .readVersion(base.version())
                        .operation(org.lance.operation.CreateIndex.builder()
                                .withNewIndices(List.of(replacement))
                                .withRemovedIndices(List.of(memWal))
                                .build())
                        .build();
                org.lance.Dataset committed = base.commitTransaction(replace)) {
            assertThat(committed.version()).isGreaterThan(base.version());
        }
    }

    /**
     * Marks lance-core's own way moved (a merge-insert with {@code markGenerationsAsMerged}, as an older build of this
     * software committed them) are not lost when a marks' commit read before them lands after them: lance rebases the
     * replacement over the merge-insert, so the marks' commit sees the watermark it lowered and commits again.
     */
    @Test
    void marksAMergeInsertMovedAfterTheReadVersionSurviveAMarksCommit() throws Exception {
        String other = ShardId.of(TOPIC, 7);
        try (RolloutTable table = localTable("marks-legacy", meters)) {
            write(table, 0, 0, 9, 100);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            LanceIo lance = TableSeams.mergeRound(table).lance();
            long markedBefore = table.generations().watermarks().get(shard);
            try (org.lance.Dataset stale = lance.openBase()) {
                try (org.lance.Dataset latest = lance.openBase()) {
                    legacyMark(latest, other, 40, lance);
                }
                assertThat(table.generations().watermarks()).containsEntry(other, 40L);
                mark(lance, stale, markedBefore + 5);
            }
            assertThat(table.generations().watermarks())
                    .containsEntry(other, 40L)
                    .containsEntry(shard, markedBefore + 5);
        }
    }

    /** lance-core's merge-insert marks, with an empty source of the key column. */
    private static void legacyMark(org.lance.Dataset base, String shard, long generation, LanceIo lance)
            throws Exception {
        org.apache.arrow.memory.BufferAllocator allocator = lance.allocator();
        org.apache.arrow.vector.types.pojo.Schema keyOnly = new org.apache.arrow.vector.types.pojo.Schema(
                List.of(base.getSchema().findField(RolloutSchema.RECORD_ID)));
        org.lance.merge.MergeInsertParams params = new org.lance.merge.MergeInsertParams(
                        List.of(RolloutSchema.RECORD_ID))
                .withMatchedUpdateAll()
                .withNotMatched(org.lance.merge.MergeInsertParams.WhenNotMatched.DoNothing)
                .markGenerationsAsMerged(List.of(new org.lance.memwal.MergedGeneration(shard, generation)));
        try (org.apache.arrow.vector.VectorSchemaRoot empty =
                        org.apache.arrow.vector.VectorSchemaRoot.create(keyOnly, allocator);
                org.apache.arrow.c.ArrowArrayStream stream =
                        org.apache.arrow.c.ArrowArrayStream.allocateNew(allocator)) {
            empty.allocateNew();
            empty.setRowCount(0);
            org.apache.arrow.c.Data.exportArrayStream(
                    allocator, new dev.rolloutingest.table.storage.BatchReader(allocator, empty), stream);
            base.mergeInsert(params, stream).dataset().close();
        }
    }

    private void mark(LanceIo lance, org.lance.Dataset base, long generation) {
        try (base) {
            MemWalWatermarks.mark(base, List.of(new org.lance.memwal.MergedGeneration(shard, generation)), 1);
        }
    }

    /**
     * The commit fence's premise: an {@code Update} naming a fragment that another commit changed after its read
     * version (here: rows of it deleted) is refused with a retryable conflict, not rebased.
     */
    @Test
    void anUpdateNamingAFragmentAnotherCommitChangedIsRefused() {
        try (RolloutTable table = localTable("fence-premise", meters)) {
            write(table, 0, 0, 9, 100);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            LanceIo lance = TableSeams.mergeRound(table).lance();
            try (org.lance.Dataset first = lance.openBase();
                    org.lance.Dataset second = lance.openBase()) {
                FencedCommit.commit(
                                lance,
                                ObjectStores.open(table.location()),
                                first,
                                first.getFragments(),
                                List.of(),
                                List.of(),
                                new FencedCommit.Deletions(java.util.Map.of(0, List.of(1))),
                                0,
                                java.util.Map.of())
                        .dataset()
                        .close();
                assertThatThrownBy(() -> FencedCommit.commit(
                                lance,
                                ObjectStores.open(table.location()),
                                second,
                                second.getFragments(),
                                List.of(),
                                List.of(),
                                new FencedCommit.Deletions(java.util.Map.of(0, List.of(2))),
                                0,
                                java.util.Map.of()))
                        .isInstanceOf(FencedCommit.Preempted.class);
            }
            assertThat(table.countBaseRows()).isEqualTo(9);
        }
    }

    /**
     * lance-core numbers a fenced commit's new fragments at the commit, above the highest id ever given: right above
     * the base's own when nothing came between, higher when a commit it was rebased over added fragments. The commit
     * reports the ids they got either way (the key filter marks them read).
     */
    @Test
    void aFencedCommitReportsTheIdsLanceGaveItsFragmentsRebasedOrNot() throws Exception {
        try (RolloutTable table = localTable("fence-ids", meters)) {
            write(table, 0, 0, 9, 100);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            LanceIo lance = TableSeams.mergeRound(table).lance();
            org.apache.arrow.memory.BufferAllocator allocator = lance.allocator(); // the batches go through lance's
            for (boolean rebased : new boolean[] {false, true}) {
                try (org.lance.Dataset base = lance.openBase()) {
                    if (rebased) { // a plain append lands after the read version: it does not touch the fence
                        appendWithLance(table.location(), rows(0, 500, 503, 4));
                    }
                    java.util.Set<Integer> before = new java.util.HashSet<>();
                    try (org.lance.Dataset latest = lance.openBase()) {
                        latest.getFragments().forEach(f -> before.add(f.getId()));
                    }
                    List<org.apache.arrow.vector.VectorSchemaRoot> batches = List.of(
                            dev.rolloutingest.table.rows.ArrowRows.toRoot(allocator, rows(0, 600, 602, 3)),
                            dev.rolloutingest.table.rows.ArrowRows.toRoot(allocator, rows(0, 700, 701, 2)));
                    try {
                        FencedCommit.Committed committed = FencedCommit.commit(
                                lance,
                                ObjectStores.open(table.location()),
                                base,
                                base.getFragments(),
                                batches,
                                List.of(),
                                FencedCommit.Deletions.NONE,
                                0,
                                java.util.Map.of());
                        try (org.lance.Dataset landed = committed.dataset()) {
                            java.util.Map<String, Integer> listed = new java.util.HashMap<>();
                            landed.getFragments()
                                    .forEach(f -> listed.put(
                                            f.metadata().getFiles().get(0).getPath(), f.getId()));
                            assertThat(committed.added().stream()
                                            .mapToLong(org.lance.FragmentMetadata::getPhysicalRows)
                                            .sum())
                                    .isEqualTo(5);
                            for (org.lance.FragmentMetadata added : committed.added()) {
                                assertThat(before).doesNotContain(added.getId());
                                assertThat(added.getId())
                                        .as("rebased: %s", rebased)
                                        .isEqualTo(listed.get(
                                                added.getFiles().get(0).getPath()));
                            }
                        }
                    } finally {
                        batches.forEach(org.apache.arrow.vector.VectorSchemaRoot::close);
                    }
                }
            }
        }
    }

    /**
     * lance-core 7.0.0's filters cannot look into the metadata column (a list of key/value structs): {@code
     * map_keys}, indexing and {@code element_at} are refused. Deletes are found by their empty experiment and
     * rollout_id ({@link Tombstones#CANDIDATES}) and told apart by the marker read in Java.
     */
    @Test
    void theMetadataColumnCannotBeFilteredByKey() {
        try (RolloutTable table = localTable("metadata-filter", meters)) {
            write(table, 0, 0, 9, 100);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            LanceIo lance = TableSeams.mergeRound(table).lance();
            for (String filter : List.of(
                    "array_has(map_keys(metadata), 'k')",
                    "metadata['k'] IS NOT NULL",
                    "element_at(metadata, 'k') IS NOT NULL")) {
                assertThatThrownBy(() -> {
                            try (org.lance.Dataset base = lance.openBase();
                                    org.lance.ipc.LanceScanner scanner =
                                            base.newScan(new org.lance.ipc.ScanOptions.Builder()
                                                    .columns(List.of(RolloutSchema.RECORD_ID))
                                                    .filter(filter)
                                                    .build());
                                    org.apache.arrow.vector.ipc.ArrowReader reader = scanner.scanBatches()) {
                                reader.loadNextBatch();
                            }
                        })
                        .as(filter)
                        .hasMessageMatching("(?s).*(Error during planning|Error optimizing sql filter).*");
            }
            try (org.lance.Dataset base = lance.openBase()) {
                assertThat(Tombstones.count(base)).isZero();
            }
        }
    }
}
