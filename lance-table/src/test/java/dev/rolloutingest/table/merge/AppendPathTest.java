package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.maintenance.TableMaintenance;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/**
 * Merges append the keys the base certainly lacks and join only the rest; the two commits (append, then the
 * merge-insert with the marks) leave every key once, whatever stops between them and whoever commits beside.
 * Every check of the base reads it with lance-core alone.
 */
class AppendPathTest {
    /** Adoption of generations of any size (the tests' generations are small). */
    private static final TableSettings ADOPTING = TableSettings.DEFAULTS.with(TableSettings.MERGE_ADOPT_MIN_ROWS, 0);

    private static final Instant T0 = Instant.parse("2026-12-01T00:00:00Z");

    /** Rows for offsets [first, first + n) of a partition with ids key-(start..start+n), ingested at T0 + seconds. */
    private static List<RolloutRow> rows(int partition, long first, int start, int n, long seconds) {
        RolloutGenerator generator = new RolloutGenerator("append", 8, partition);
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Rollout rollout = generator.rollout(first + i, (int) first + i);
            rollout.setRecordId("key-" + (start + i));
            rows.add(new RolloutRow(rollout, partition, first + i, T0.plusSeconds(seconds)));
        }
        return rows;
    }

    private static void write(RolloutTable table, int partition, long first, int start, int n, long seconds) {
        table.generations()
                .write(TOPIC, partition, first, first + n - 1, rows(partition, first, start, n, seconds), n * 100L);
    }

    /** Rows merged as keys new to the base: written again (append) or in whole adopted generations. */
    private static double newRows(SimpleMeterRegistry meters) {
        return rows(meters, MergePath.APPEND) + rows(meters, MergePath.ADOPT);
    }

    private static double rows(SimpleMeterRegistry meters, MergePath path) {
        return TableFixtures.mergedRows(meters, path);
    }

    @Test
    void newKeysAreAppendedAndOnlyKeysTheBaseHoldsAreJoined() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("append-split"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            write(table, 0, 0, 0, 500, 0); // key-0..499
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(newRows(meters)).isEqualTo(500);
            assertThat(rows(meters, MergePath.JOIN)).isZero();

            List<RolloutRow> second = rows(0, 500, 450, 100, 1); // key-450..549: 50 rewritten, 50 new
            table.generations().write(TOPIC, 0, 500, 599, second, 100 * 100L);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(newRows(meters)).isEqualTo(550);
            assertThat(rows(meters, MergePath.JOIN)).isEqualTo(50);

            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(550);
            assertThat(base.get("key-449")).isEqualTo("0@449");
            assertThat(base.get("key-450")).isEqualTo("0@500"); // the rewrite won
            assertThat(base.get("key-549")).isEqualTo("0@599");
            assertThat(table.get("key-450").orElseThrow().sourceOffset()).isEqualTo(500);
            // appended rows are slices of the generation's batch around the joined ones: every column intact
            for (RolloutRow written : List.of(second.get(0), second.get(49), second.get(50), second.get(99))) {
                RolloutRow read =
                        table.get(written.rollout().getRecordId().toString()).orElseThrow();
                assertThat(read.rollout()).isEqualTo(written.rollout());
            }
            assertThat(table.generations().pending(shard)).isEmpty();
        }
    }

    @Test
    void aGenerationOfNewKeysOnlyIsAdoptedWholeItsFilesLinkedNotWritten() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("adopt"));
        String shard0 = ShardId.of(TOPIC, 0);
        String shard1 = ShardId.of(TOPIC, 1);
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, meters)) {
            List<RolloutRow> adopted = rows(0, 0, 0, 100, 0); // key-0..99: new
            SealedGeneration generation = table.generations().write(TOPIC, 0, 0, 99, adopted, 100 * 100L);
            // partition 1: one generation of new keys whose key-250 partition 0 rewrites later in the same round
            write(table, 1, 0, 200, 100, 0); // key-200..299
            write(table, 0, 100, 250, 1, 9); // key-250, ingested later: the partition 1 row of it is dropped
            RoundResult round = MergeSteps.commit(
                    table,
                    MergeSteps.plan(table, List.of(shard0, shard1), 8, 0).stream()
                            .map(p -> MergeSteps.prepare(table, p))
                            .toList());
            assertThat(round.failed()).isEmpty();
            // shard 0's first generation is adopted; its second (one row) too; shard 1's lost a row to the rewrite
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(101);
            assertThat(rows(meters, MergePath.APPEND)).isEqualTo(99);
            assertThat(rows(meters, MergePath.JOIN)).isZero();

            // the base's data file is the generation's, linked: the same file, not a copy
            Path genData = Path.of(location.resolve(generation.datasetPath())).resolve("data");
            Path genFile;
            try (var files = Files.list(genData)) {
                genFile = files.findFirst().orElseThrow();
            }
            Path baseFile;
            try (var files = Files.list(Path.of(location.uri(), "data"))) {
                baseFile = files.filter(f -> f.getFileName().toString().endsWith("-" + genFile.getFileName()))
                        .findFirst()
                        .orElseThrow();
            }
            assertThat(Files.isSameFile(genFile, baseFile)).isTrue();

            // GC removes the generation folders; the base keeps reading the adopted rows, every column intact
            table.maintenance().collectGarbage(Duration.ZERO);
            assertThat(Files.exists(genData)).isFalse();
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(200);
            assertThat(base.get("key-250")).isEqualTo("0@100");
            for (RolloutRow written : List.of(adopted.get(0), adopted.get(99))) {
                assertThat(table.get(written.rollout().getRecordId().toString())
                                .orElseThrow()
                                .rollout())
                        .isEqualTo(written.rollout());
            }
            table.maintenance().compact(1_000_000);
            table.maintenance().optimizeKeyIndex();
            assertThat(baseRows(location)).hasSize(200);
            assertThat(table.get("key-42").orElseThrow().sourceOffset()).isEqualTo(42);
        }
    }

    @Test
    void aGenerationWhoseRowsAllReplaceOlderBaseRowsIsAdoptedWholeAndTheRowsItReplacesLeave() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("adopt-updates"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, meters)) {
            write(table, 0, 0, 0, 100, 0); // key-0..99
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            SealedGeneration updates =
                    table.generations().write(TOPIC, 0, 100, 149, rows(0, 100, 0, 50, 1), 50 * 100L); // key-0..49
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(rows(meters, MergePath.JOIN)).isEqualTo(50);
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(100); // the first generation's new keys only
            assertThat(rows(meters, MergePath.APPEND)).isZero();
            Path genFile;
            try (var files =
                    Files.list(Path.of(location.resolve(updates.datasetPath())).resolve("data"))) {
                genFile = files.findFirst().orElseThrow();
            }
            try (var files = Files.list(Path.of(location.uri(), "data"))) {
                assertThat(files.filter(f -> f.getFileName().toString().endsWith("-" + genFile.getFileName())))
                        .hasSize(1);
            }

            write(table, 0, 150, 40, 30, 2); // key-40..69: 30 updates and nothing else: adopted too
            write(table, 0, 180, 95, 10, 3); // key-95..104: 5 updates, 5 new keys: adopted too
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(rows(meters, MergePath.JOIN)).isEqualTo(85);
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(105);
            assertThat(rows(meters, MergePath.APPEND)).isZero();

            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(105);
            assertThat(base.get("key-0")).isEqualTo("0@100");
            assertThat(base.get("key-45")).isEqualTo("0@155");
            assertThat(base.get("key-70")).isEqualTo("0@70");
            assertThat(base.get("key-99")).isEqualTo("0@184");
            assertThat(base.get("key-104")).isEqualTo("0@189");
            assertThat(table.get("key-45").orElseThrow().sourceOffset()).isEqualTo(155);
        }
    }

    /**
     * An append's fragments keep the ids it gives them (lance numbers only id 0), and an index segment's fragment list stays as it was
     * made: a fragment deleted whole leaves its id in the index. The append numbers its fragments above it, or a
     * lookup would trust the index for rows it never held.
     */
    @Test
    void appendedFragmentsAreNumberedAboveEveryIdAnIndexStillCovers() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-ids"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 100, 0);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, 100, 100, 100, 1);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            table.maintenance().optimizeKeyIndex();
            int highest;
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(location.uri())
                            .build()) {
                highest = base.getFragments().stream()
                        .mapToInt(org.lance.Fragment::getId)
                        .max()
                        .orElseThrow();
                // the newest fragment's rows all deleted: lance drops the fragment, the index keeps its id
                base.delete("record_id >= 'key-100' AND record_id < 'key-199' OR record_id = 'key-199'");
            }
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(location.uri())
                            .build()) {
                assertThat(base.getFragments()).noneMatch(f -> f.getId() == highest);
                assertThat(FencedCommit.firstFreeId(base)).isGreaterThan(highest);
            }
            write(table, 0, 200, 300, 50, 2); // key-300..349
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            for (int k = 300; k < 350; k++) {
                assertThat(table.get("key-" + k)).as("key-%d", k).isPresent();
            }
        }
    }

    /**
     * The marks' commit alone ({@link MemWalWatermarks#mark}) moves the watermark and leaves every fragment, row
     * and column as it was: it replaces the MemWAL index, nothing else.
     */
    @Test
    void marksAloneMoveTheWatermarkAndLeaveEveryFragmentRowAndColumn() throws Exception {
        TableLocation location = TableLocation.local(freshDir("marks-only"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RootAllocator allocator = new RootAllocator()) {
            write(table, 0, 0, 0, 10, 0);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            SealedGeneration generation = table.generations().write(TOPIC, 0, 10, 19, rows(0, 10, 10, 10, 0), 1000);
            List<org.lance.memwal.MergedGeneration> marks =
                    List.of(new org.lance.memwal.MergedGeneration(shard, generation.generation()));
            assertThat(table.generations().watermarks().getOrDefault(shard, 0L))
                    .as("not marked yet")
                    .isLessThan(generation.generation());
            String detailsBefore;
            try (Dataset base =
                    Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                detailsBefore = base.memWalIndexDetails().orElseThrow().toString();
            }
            String before;
            org.apache.arrow.vector.types.pojo.Schema schemaBefore;
            try (Dataset base =
                    Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                before = base.getFragments().stream()
                        .map(f -> f.metadata().toString())
                        .toList()
                        .toString();
                schemaBefore = base.getSchema();
                MemWalWatermarks.mark(base, marks, 0);
            }
            assertThat(table.generations().watermarks().getOrDefault(shard, 0L))
                    .as("marked by the marks' commit")
                    .isEqualTo(generation.generation());
            try (Dataset base =
                    Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                assertThat(base.getFragments().stream()
                                .map(f -> f.metadata().toString())
                                .toList()
                                .toString())
                        .as("no fragment changed")
                        .isEqualTo(before);
                assertThat(base.getSchema()).isEqualTo(schemaBefore);
                assertThat(base.memWalIndexDetails().map(Object::toString))
                        .as("lance-core reads the replaced MemWAL index as it was, but for the watermarks")
                        .contains(detailsBefore);
                assertThat(base.countRows()).isEqualTo(10);
            }
            for (int k = 0; k < 10; k++) {
                assertThat(table.get("key-" + k)).as("key-%d", k).isPresent();
            }
        }
    }

    /**
     * Commits of one process may catch the filter up to bases of different versions in any order (each commit
     * reads the version it opened): the filter never goes back to an older base's keys.
     */
    @Test
    void theKeyFilterNeverForgetsWhatANewerBaseHeld() throws Exception {
        TableLocation location = TableLocation.local(freshDir("filter-order"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RootAllocator allocator = new RootAllocator()) {
            write(table, 0, 0, 0, 100, 0);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            long older;
            try (Dataset base =
                    Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                older = base.version();
            }
            write(table, 0, 100, 100, 100, 1); // key-100..199
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            BaseKeys keys = new BaseKeys(TableSeams.mergeRound(table).lance(), new SimpleMeterRegistry());
            try (Dataset newer = Dataset.open()
                            .allocator(allocator)
                            .uri(location.uri())
                            .build();
                    Dataset old = newer.checkoutVersion(older)) {
                keys.catchUp(newer);
                keys.catchUp(old); // a commit that opened the older version catches up after one that opened the newer
            }
            for (int k = 0; k < 200; k++) {
                assertThat(keys.mightHold(KeyFilter.hash("key-" + k)))
                        .as("key-%d", k)
                        .isTrue();
            }
        }
    }

    /** More keys than the filter was sized for add a layer to it, never a rebuild, and it still misses none. */
    @Test
    void aFilterOutgrownTakesALayerInsteadOfARebuild() throws Exception {
        TableLocation location = TableLocation.local(freshDir("filter-layers"));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RootAllocator allocator = new RootAllocator()) {
            BaseKeys keys = new BaseKeys(TableSeams.mergeRound(table).lance(), meters, 100);
            try (Dataset empty =
                    Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                keys.catchUp(empty);
            }
            for (int g = 0; g < 5; g++) {
                write(table, 0, g * 200L, g * 200, 200, g);
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
                try (Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                    keys.catchUp(base);
                }
            }
            assertThat(keys.layers()).isGreaterThan(1);
            assertThat(meters.get("rollout.merge.key.filter.load")
                            .tag("kind", "build")
                            .timer()
                            .count())
                    .isEqualTo(1);
            for (int k = 0; k < 1000; k++) {
                assertThat(keys.mightHold(KeyFilter.hash("key-" + k)))
                        .as("key-%d", k)
                        .isTrue();
            }
        }
    }

    /**
     * A key the filter cannot rule out but the base does not hold (a false positive; here a key deleted from the
     * base, which stays in the filter) is checked exactly: appended, and its generation still adopted whole.
     */
    @Test
    void aKeyTheFilterCannotRuleOutIsCheckedExactlyAndDoesNotStopAnAdoption() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("false-positive"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, meters);
                RootAllocator allocator = new RootAllocator()) {
            write(table, 0, 0, 0, 100, 0); // key-0..99
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            try (Dataset base =
                    Dataset.open().allocator(allocator).uri(location.uri()).build()) {
                base.delete("record_id = 'key-5'");
            }
            write(table, 0, 100, 0, 1, 1); // key-0, in the base: joined, in a generation of its own
            write(table, 0, 101, 5, 1, 1); // key-5: the filter says maybe, the base says no
            write(table, 0, 102, 200, 98, 1); // key-200..297: new
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(meters.get("rollout.merge.key.filter.false.positives")
                            .counter()
                            .count())
                    .isEqualTo(1);
            assertThat(rows(meters, MergePath.JOIN)).isEqualTo(1); // key-0
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(100 + 1 + 98);
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(100 + 98);
            assertThat(base.get("key-5")).isEqualTo("0@101");
            assertThat(base.get("key-0")).isEqualTo("0@100");
        }
    }

    /**
     * A generation of mostly new keys and a few rows older than the base's of their keys is prepared with its keys
     * only (it looks new), then cannot be adopted (rows of it are dropped): its rows are read in full at the commit,
     * the new ones appended.
     */
    @Test
    void aMostlyNewGenerationWithAFewRowsOlderThanTheBaseIsReadInFullAtTheCommit() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("few-older"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, ADOPTING, meters)) {
            write(table, 0, 0, 0, 100, 10); // key-0..99, ingested at 10 s
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            // partition 1, ingested at 1 s: key-0 and key-1 lose to the base's; key-1000..1997 are new
            List<RolloutRow> rows = new ArrayList<>(rows(1, 0, 0, 2, 1));
            rows.addAll(rows(1, 2, 1000, 998, 1));
            table.generations().write(TOPIC, 1, 0, 999, rows, rows.size() * 100L);
            MergeResult merged =
                    table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            assertThat(merged.rows()).isEqualTo(1000);
            assertThat(rows(meters, MergePath.SUPERSEDED)).isEqualTo(2);
            assertThat(rows(meters, MergePath.APPEND)).isEqualTo(998);
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(100 + 998);
            assertThat(base.get("key-1")).isEqualTo("0@1");
            for (RolloutRow written : List.of(rows.get(2), rows.get(500), rows.get(999))) {
                assertThat(table.get(written.rollout().getRecordId().toString())
                                .orElseThrow()
                                .rollout())
                        .isEqualTo(written.rollout());
            }
        }
    }

    @Test
    void withAdoptionOffEveryNewRowIsWritten() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("no-adopt"));
        try (RolloutTable table = RolloutTable.createOrOpen(
                location, TableSettings.DEFAULTS.with(TableSettings.MERGE_ADOPT_GENERATIONS, false), meters)) {
            write(table, 0, 0, 0, 100, 0);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(rows(meters, MergePath.APPEND)).isEqualTo(100);
            assertThat(rows(meters, MergePath.ADOPT)).isZero();
            assertThat(baseRows(location)).hasSize(100);
        }
    }

    /** Each adopted generation would stay a fragment; small ones are written together, one fragment a commit. */
    @Test
    void generationsBelowTheAdoptionSizeAreWrittenTogetherAsOneFragment() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("adopt-min"));
        try (RolloutTable table = RolloutTable.createOrOpen(
                location, TableSettings.DEFAULTS.with(TableSettings.MERGE_ADOPT_MIN_ROWS, 150), meters)) {
            write(table, 0, 0, 0, 100, 0); // below 150 rows: written
            write(table, 0, 100, 100, 100, 0); // written, into the same fragment
            write(table, 0, 200, 200, 200, 0); // 200 rows: adopted whole
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(rows(meters, MergePath.APPEND)).isEqualTo(200);
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(200);
            assertThat(baseFragments(location)).isEqualTo(2);
            assertThat(baseRows(location)).hasSize(400);
        }
    }

    /** Each adopted generation stays a fragment until compaction: the base's fragment count bounds adoption. */
    @Test
    void generationsAreAdoptedOnlyWhileTheBaseHasFewerFragmentsThanTheLimit() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("adopt-max-fragments"));
        TableSettings capped = ADOPTING.with(TableSettings.MERGE_ADOPT_MAX_BASE_FRAGMENTS, 2);
        try (RolloutTable table = RolloutTable.createOrOpen(location, capped, meters)) {
            int before = baseFragments(location);
            assertThat(before).isLessThan(2);
            for (int g = 0; g < 4; g++) {
                write(table, 0, g * 100L, g * 100, 100, 0); // four generations of new keys
            }
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            int adopted = 2 - before;
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(adopted * 100);
            assertThat(rows(meters, MergePath.APPEND)).isEqualTo((4 - adopted) * 100);
            assertThat(overFragments(meters)).isEqualTo(4 - adopted);
            int after = baseFragments(location);
            assertThat(after).isGreaterThanOrEqualTo(2);

            double rereads = reread(meters);

            write(table, 0, 400, 400, 100, 0); // the base is at the limit: written
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(adopted * 100);
            assertThat(overFragments(meters)).isEqualTo(5 - adopted);
            // known to be at the limit since the last commit: read in full once, not by its keys and then again
            assertThat(reread(meters)).isEqualTo(rereads);
        }
        // room for exactly one more fragment: one of the next two generations is adopted, the other written
        SimpleMeterRegistry reopened = new SimpleMeterRegistry();
        TableSettings oneMore =
                ADOPTING.with(TableSettings.MERGE_ADOPT_MAX_BASE_FRAGMENTS, baseFragments(location) + 1);
        try (RolloutTable table = RolloutTable.createOrOpen(location, oneMore, reopened)) {
            write(table, 0, 500, 500, 100, 0);
            write(table, 0, 600, 600, 100, 0);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(rows(reopened, MergePath.ADOPT)).isEqualTo(100);
            assertThat(rows(reopened, MergePath.APPEND)).isEqualTo(100);
            assertThat(overFragments(reopened)).isEqualTo(1);
        }
        assertThat(baseRows(location)).hasSize(700);
    }

    /** The merge-worker's compaction folds the adopted fragments, and the next generations are adopted again. */
    @Test
    void aCompactionGivesAdoptionItsRoomBack() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("adopt-after-compaction"));
        try (RolloutTable table = RolloutTable.createOrOpen(
                location, ADOPTING.with(TableSettings.MERGE_ADOPT_MAX_BASE_FRAGMENTS, 3), meters)) {
            for (int g = 0; g < 5; g++) {
                write(table, 0, g * 100L, g * 100, 100, 0);
            }
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(baseFragments(location)).isGreaterThanOrEqualTo(3);
            double adoptedBefore = rows(meters, MergePath.ADOPT);
            assertThat(overFragments(meters)).isPositive();

            table.maintenance().compact(1_000_000);
            assertThat(baseFragments(location)).isLessThan(3);
            write(table, 0, 500, 500, 100, 0);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(rows(meters, MergePath.ADOPT)).isEqualTo(adoptedBefore + 100);
        }
        assertThat(baseRows(location)).hasSize(600);
    }

    private static double reread(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.generations.reread").counter().count();
    }

    private static double overFragments(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.adopt.over.fragments").counter().count();
    }

    private static int baseFragments(TableLocation location) {
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            return base.getFragments().size();
        }
    }

    @Test
    void aCrashBetweenTheAppendAndTheMarksLeavesEveryKeyOnceForReadsAndForTheNextCommitter() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-crash"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 300, 0); // key-0..299
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, 300, 200, 200, 1); // key-200..399: 100 rewritten, 100 new
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.APPENDED) {
                    throw new IllegalStateException("injected: the committer stops after the append");
                }
            });
            assertThatThrownBy(() -> table.merges().pass(MergeRequest.of(shard).limits(8, 0)))
                    .hasMessageContaining("injected");
            TableSeams.failMergeCommitsAt(table, null);

            // The generation's rows are in the base and in the still-pending generation: every read counts them once.
            Map<String, String> between = baseRows(location);
            assertThat(between).hasSize(400);
            assertThat(between.get("key-250")).isEqualTo("0@350"); // its rewrite too, in place of the old row
            assertThat(table.generations().pending(shard)).hasSize(1);
            assertThat(table.countRows()).isEqualTo(400);
            assertThat(table.list(ListQuery.all(1000))).hasSize(400);
            assertThat(table.get("key-250").orElseThrow().sourceOffset()).isEqualTo(350);
            assertThat(table.get("key-399").orElseThrow().sourceOffset()).isEqualTo(499);
        }
        // A new committer (a restarted merge-worker: nothing in memory) finishes the job without a duplicate.
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            MergeResult result = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(result.mergedGenerations()).containsExactly(500L);
            assertThat(newRows(meters)).isZero(); // all 200 rows are in the base already: only the marks are left
            assertThat(rows(meters, MergePath.JOIN)).isZero();
            assertThat(rows(meters, MergePath.SUPERSEDED)).isEqualTo(200);
            assertThat(table.generations().pending(shard)).isEmpty();
            Map<String, String> after = baseRows(location);
            assertThat(after).hasSize(400);
            assertThat(after.get("key-250")).isEqualTo("0@350");
            assertThat(after.get("key-399")).isEqualTo("0@499");
        }
    }

    @Test
    void theSameCommitterRetryingAfterTheAppendFindsWhatItAppendedAndWritesNothingAgain() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("append-retry"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            write(table, 0, 0, 0, 100, 0);
            AtomicBoolean once = new AtomicBoolean(true);
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.APPENDED && once.getAndSet(false)) {
                    throw new IllegalStateException("injected: the merge-insert fails once");
                }
            });
            assertThatThrownBy(() -> table.merges().pass(MergeRequest.of(shard).limits(8, 0)))
                    .hasMessageContaining("injected");
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(newRows(meters)).isEqualTo(100);
            assertThat(rows(meters, MergePath.SUPERSEDED)).isEqualTo(100);
            assertThat(baseRows(location)).hasSize(100);
            assertThat(table.generations().pending(shard)).isEmpty();
        }
    }

    @Test
    void aCrashRightAfterTheMarksLeavesNothingToRedo() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-marked"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 100, 0);
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.MARKED) {
                    throw new IllegalStateException("injected: the committer stops after the marks");
                }
            });
            assertThatThrownBy(() -> table.merges().pass(MergeRequest.of(shard).limits(8, 0)))
                    .hasMessageContaining("injected");
        }
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            assertThat(table.generations().pending(shard)).isEmpty();
            assertThat(table.merges().pass(MergeRequest.of(shard).limits(8, 0)).mergedAnything())
                    .isFalse();
            assertThat(baseRows(location)).hasSize(100);
        }
    }

    /**
     * Two committers on one table, each with its own key filter, both finding the same keys absent (a record_id
     * written to two partitions whose shards they merge): the one that commits second is refused, checks the keys
     * again on the newer base and keeps the newer rows. With lance-core's plain Append both would add every key.
     */
    @Test
    void twoCommittersNeverAppendTheSameKeyTwice() throws Exception {
        // an empty base: the first append commits as a Merge of the (empty) fragment list
        raceTwoCommitters(TableLocation.local(freshDir("append-race")), 0);
    }

    @Test
    void onABaseWithRowsTwoCommittersAppendsExcludeEachOtherThroughTheFence() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-race-fenced"));
        try (RolloutTable seed =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(seed, 2, 0, 1_000, 50, 0); // key-1000..1049: the base's first fragment, the fence
            seed.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 2)).limits(8, 0));
        }
        raceTwoCommitters(location, 50);
    }

    private void raceTwoCommitters(TableLocation location, int baseRows) throws Exception {
        SimpleMeterRegistry metersA = new SimpleMeterRegistry();
        SimpleMeterRegistry metersB = new SimpleMeterRegistry();
        String shard0 = ShardId.of(TOPIC, 0);
        String shard1 = ShardId.of(TOPIC, 1);
        try (RolloutTable a = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, metersA);
                RolloutTable b = RolloutTable.open(location, TableSettings.DEFAULTS, metersB)) {
            write(a, 0, 0, 0, 200, 0); // key-0..199 in partition 0
            write(a, 1, 0, 100, 200, 5); // key-100..299 in partition 1, ingested later: its values win
            AtomicBoolean once = new AtomicBoolean(true);
            // A has checked its filter (all 200 keys absent) and is about to write them: B commits first.
            TableSeams.failDatasetWrites(a, batch -> {
                if (once.getAndSet(false)) {
                    assertThat(b.merges()
                                    .pass(MergeRequest.of(shard1).limits(8, 0))
                                    .rows())
                            .isEqualTo(200);
                }
                return null;
            });
            MergeResult merged = a.merges().pass(MergeRequest.of(shard0).limits(8, 0));
            TableSeams.failDatasetWrites(a, null);

            assertThat(merged.mergedGenerations()).containsExactly(200L);
            Map<String, String> base = baseRows(location); // fails on any key held twice
            assertThat(base).hasSize(300 + baseRows);
            assertThat(base.get("key-50")).isEqualTo("0@50");
            assertThat(base.get("key-150")).isEqualTo("1@50"); // ingested later in partition 1
            assertThat(metersA.get("rollout.merge.append.preempted").counter().count())
                    .isEqualTo(1);
            // B appended key-100..299; A, refused once, appended only key-0..99 and found B's key-100..199 newer.
            assertThat(newRows(metersB)).isEqualTo(200);
            assertThat(newRows(metersA)).isEqualTo(100);
            assertThat(rows(metersA, MergePath.SUPERSEDED)).isEqualTo(100);
            assertThat(a.generations().pending(shard0)).isEmpty();
            assertThat(a.generations().pending(shard1)).isEmpty();
        }
    }

    /**
     * A fenced append is rebased over a merge-insert of another committer that touched other fragments; that
     * merge-insert adds a fragment of its own (the rewritten rows), numbered by lance. Numbering the append's
     * fragments from its read version gave both the same id: the base could no longer be read ("Invalid read of
     * range ... for fragment N"). lance numbers them at the commit now.
     */
    @Test
    void anAppendRebasedOverAnotherCommittersJoinNeverSharesAFragmentId() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-ids-race"));
        String shard0 = ShardId.of(TOPIC, 0);
        String shard1 = ShardId.of(TOPIC, 1);
        try (RolloutTable a = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RolloutTable b = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(a, 0, 0, 0, 100, 0); // key-0..99: fragment 0, the fence
            a.merges().pass(MergeRequest.of(shard0).limits(8, 0));
            write(a, 0, 100, 100, 100, 1); // key-100..199: another fragment
            a.merges().pass(MergeRequest.of(shard0).limits(8, 0));
            write(a, 1, 0, 150, 10, 5); // partition 1 rewrites key-150..159: B joins them (not the fence)
            write(a, 0, 200, 1000, 50, 2); // key-1000..1049: new, A appends them
            AtomicBoolean once = new AtomicBoolean(true);
            TableSeams.failDatasetWrites(a, batch -> {
                if (once.getAndSet(false)) {
                    assertThat(b.merges()
                                    .pass(MergeRequest.of(shard1).limits(8, 0))
                                    .rows())
                            .isEqualTo(10);
                }
                return null;
            });
            a.merges().pass(MergeRequest.of(shard0).limits(8, 0));
            TableSeams.failDatasetWrites(a, null);

            List<Integer> ids;
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(location.uri())
                            .build()) {
                ids = base.getFragments().stream()
                        .map(org.lance.Fragment::getId)
                        .toList();
            }
            assertThat(ids).doesNotHaveDuplicates();
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(200 + 50);
            assertThat(base.get("key-155")).isEqualTo("1@5");
            assertThat(a.get("key-1049")).isPresent();
        }
    }

    @Test
    void aCompactionAndAnAppendOfNewKeysCommittedMeanwhileBothLand() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-compact-race"));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters);
                RolloutTable compactor =
                        RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int g = 0; g < 4; g++) {
                write(table, 0, g * 100L, g * 100, 100, g); // key-0..399, 4 fragments
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            }
            write(table, 0, 400, 400, 100, 10); // key-400..499, new
            int fence = fenceId(location);
            // The compaction has rewritten its fragments; before it commits, an append of new keys lands.
            TableMaintenance.CompactionResult compacted = TableSeams.compact(
                    compactor,
                    1_000_000,
                    () -> assertThat(table.merges()
                                    .pass(MergeRequest.of(shard).limits(8, 0))
                                    .rows())
                            .isEqualTo(100),
                    () -> {});

            assertThat(compacted.fragmentsBefore()).isEqualTo(4);
            // the append's fragment kept, the fence left alone, at least two others rewritten into one
            assertThat(compacted.fragmentsAfter()).isLessThan(4 + 1);
            assertThat(fenceId(location)).isEqualTo(fence);
            assertThat(meters.get("rollout.merge.append.preempted").counter().count())
                    .isZero();
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(500);
            // and the next append, fenced on the same fragment, lands on the compacted base
            write(table, 0, 500, 450, 100, 11); // key-450..549: 50 rewritten, 50 new
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(baseRows(location)).hasSize(550);
            assertThat(table.get("key-460").orElseThrow().sourceOffset()).isEqualTo(510);
        }
    }

    /**
     * Two compactions of one base (the merge-worker's upkeep and an operator's, or two processes'): the one whose
     * commit another compaction of the same fragments preempted plans again on the newer base instead of failing.
     */
    @Test
    void aCompactionPreemptedByAnotherCompactionPlansAgainAndLands() throws Exception {
        TableLocation location = TableLocation.local(freshDir("compact-compact-race"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RolloutTable other = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int g = 0; g < 4; g++) {
                write(table, 0, g * 100L, g * 100, 100, g); // key-0..399, 4 fragments
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            }
            AtomicInteger commits = new AtomicInteger();
            // the first time this compaction is about to commit, another one of the same fragments lands
            TableMaintenance.CompactionResult compacted = TableSeams.compact(
                    table,
                    1_000_000,
                    () -> {
                        if (commits.getAndIncrement() == 0) {
                            assertThat(other.maintenance().compact(1_000_000).fragmentsAfter())
                                    .isLessThan(4);
                        }
                    },
                    () -> {});

            assertThat(compacted.fragmentsAfter()).isLessThan(4);
            assertThat(baseRows(location)).hasSize(400);
            assertThat(table.get("key-250")).isPresent();
        }
    }

    private static int fenceId(TableLocation location) {
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            return FencedCommit.fence(base.getFragments()).getId();
        }
    }

    @Test
    void afterCompactionAndGcTheFilterStillKnowsEveryKey() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("append-compact"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            for (int g = 0; g < 4; g++) {
                write(table, 0, g * 100L, g * 100, 100, g); // key-0..399, 4 fragments
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            }
            table.maintenance().compact(1_000_000);
            table.maintenance().optimizeKeyIndex();
            table.maintenance().collectGarbage(Duration.ZERO);
            write(table, 0, 400, 350, 100, 10); // key-350..449: 50 rewritten, 50 new
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(newRows(meters)).isEqualTo(450);
            assertThat(rows(meters, MergePath.JOIN)).isEqualTo(50);
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(450);
            assertThat(base.get("key-360")).isEqualTo("0@410");
        }
    }

    @Test
    void aRestartedCommitterBuildsItsFilterFromTheBase() throws Exception {
        TableLocation location = TableLocation.local(freshDir("append-rebuild"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 300, 0);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
        }
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            write(table, 0, 300, 250, 100, 1); // key-250..349: 50 rewritten, 50 new
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(newRows(meters)).isEqualTo(50);
            assertThat(rows(meters, MergePath.JOIN)).isEqualTo(50);
            assertThat(meters.get("rollout.merge.key.filter.keys.read")
                            .counter()
                            .count())
                    .isGreaterThanOrEqualTo(300);
            assertThat(meters.get("rollout.merge.key.filter.bytes").gauge().value())
                    .isGreaterThan(0);
            assertThat(baseRows(location)).hasSize(350);
        }
    }
}
