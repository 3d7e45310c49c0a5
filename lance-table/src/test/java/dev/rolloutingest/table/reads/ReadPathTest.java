package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static dev.rolloutingest.table.TableFixtures.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.maintenance.KeyIndex;
import dev.rolloutingest.table.maintenance.KeyIndexTiers;
import dev.rolloutingest.table.maintenance.MaintenanceSeams;
import dev.rolloutingest.table.maintenance.TableMaintenance;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.index.Index;

/** Reads that pay for what may hold the key: key filters, the record_id index, the cached catalog. */
class ReadPathTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    private double generations(String result) {
        return meters.get("rollout.read.generations")
                .tag("result", result)
                .counter()
                .count();
    }

    @Test
    void keyFiltersHaveNoFalseNegativesAndAboutOnePercentFalsePositives() {
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            keys.add("exp-" + i);
        }
        KeyFilter filter = KeyFilter.of(keys);
        assertThat(keys).allMatch(filter::mightContain);
        int falsePositives = 0;
        for (int i = 0; i < 100_000; i++) {
            if (filter.mightContain("absent-" + i)) {
                falsePositives++;
            }
        }
        assertThat(falsePositives / 100_000.0)
                .isBetween(KeyFilter.FALSE_POSITIVE_RATE / 4, KeyFilter.FALSE_POSITIVE_RATE * 2);
        assertThat(filter.sizeBytes()).isLessThan(19_000); // ~14.4 bits a key
        // Small filters (a generation of 20 keys) keep the rate too.
        int smallFalsePositives = 0;
        for (int g = 0; g < 500; g++) {
            Set<String> few = new HashSet<>();
            for (int i = 0; i < 20; i++) {
                few.add("g" + g + "-k" + i);
            }
            KeyFilter small = KeyFilter.of(few);
            assertThat(few).allMatch(small::mightContain);
            for (int i = 0; i < 200; i++) {
                if (small.mightContain("g" + g + "-absent" + i)) {
                    smallFalsePositives++;
                }
            }
        }
        assertThat(smallFalsePositives / 100_000.0).isLessThan(KeyFilter.FALSE_POSITIVE_RATE * 2);
        assertThat(KeyFilter.decode(filter.encode())).isEqualTo(filter);
        assertThat(KeyFilter.decode("something-else:1:AAAA")).isNull();
    }

    @Test
    void aLookupOpensOnlyTheGenerationsWhoseFilterMayHoldTheKey() {
        try (RolloutTable table = localTable("filters", meters)) {
            for (long g = 0; g < 50; g++) {
                // 50 generations of 20 distinct keys each: key exp-(g*20 + i)
                write(table, 0, g * 20, g * 20 + 19, 1_000_000);
            }
            // Newest first: generations 49..11 are skipped by their filters (a false positive may open one),
            // generation 10 holds the key and ends the search in this shard.
            assertThat(table.get("exp-205").orElseThrow().sourceOffset()).isEqualTo(205);
            assertThat(generations("opened")).isBetween(1.0, 4.0);
            assertThat(generations("opened") + generations("skipped")).isEqualTo(40.0);
            assertThat(table.get("exp-absent")).isEmpty();
            assertThat(generations("opened")).isLessThan(8.0);
            assertThat(generations("skipped")).isGreaterThanOrEqualTo(40.0 - 4 + 46);
        }
    }

    @Test
    void aKeyRewrittenAcrossGenerationsReadsItsNewestValueThroughTheFilters() {
        try (RolloutTable table = localTable("rewrites", meters)) {
            for (long g = 0; g < 10; g++) {
                write(table, 0, g * 10, g * 10 + 9, 10); // the same 10 keys in every generation
            }
            assertThat(table.get("exp-3").orElseThrow().sourceOffset()).isEqualTo(93);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(4, 0));
            assertThat(table.get("exp-3").orElseThrow().sourceOffset()).isEqualTo(93);
            assertThat(table.list(ListQuery.all(100))).hasSize(10).allSatisfy(r -> assertThat(r.sourceOffset())
                    .isGreaterThanOrEqualTo(90));
        }
    }

    private static RolloutRow row(String id, int partition, long offset, Instant ingestedAt) {
        Rollout rollout = new RolloutGenerator("exp", 4, 1).rollout(offset, (int) offset);
        rollout.setRecordId(id);
        return new RolloutRow(rollout, partition, offset, ingestedAt);
    }

    @Test
    void aKeyInTwoPartitionsReadsTheValueIngestedLastBeforeAndAfterMergesInEitherOrder() {
        Instant earlier = Instant.parse("2026-11-30T10:00:00Z");
        Instant later = Instant.parse("2026-11-30T10:00:05Z");
        for (boolean newerShardFirst : new boolean[] {true, false}) {
            try (RolloutTable table = localTable("two-shards", meters)) {
                // Partition 1 holds the key at a low offset but ingested later (the topic grew partitions).
                table.generations().write(TOPIC, 0, 500, 500, List.of(row("moved", 0, 500, earlier)), 10);
                table.generations().write(TOPIC, 1, 3, 3, List.of(row("moved", 1, 3, later)), 10);
                assertThat(table.get("moved").orElseThrow().sourcePartition()).isEqualTo(1);
                assertThat(table.list(ListQuery.all(10))).singleElement().satisfies(r -> assertThat(r.sourcePartition())
                        .isEqualTo(1));
                int first = newerShardFirst ? 1 : 0;
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, first)).limits(0, 0));
                assertThat(table.get("moved").orElseThrow().sourcePartition()).isEqualTo(1);
                assertThat(table.list(ListQuery.all(10))).singleElement().satisfies(r -> assertThat(r.sourcePartition())
                        .isEqualTo(1));
                table.merges()
                        .pass(MergeRequest.of(ShardId.of(TOPIC, 1 - first)).limits(0, 0));
                assertThat(table.get("moved").orElseThrow().sourcePartition())
                        .as("after merging %s first", newerShardFirst ? "the newer shard" : "the older shard")
                        .isEqualTo(1);
                assertThat(table.list(ListQuery.all(10))).singleElement().satisfies(r -> assertThat(r.sourcePartition())
                        .isEqualTo(1));
            }
        }
    }

    @Test
    void aGenerationSealedBeforeFiltersExistedIsStillOpenedByLookups() throws Exception {
        Path dir = freshDir("no-filter");
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters)) {
            SealedGeneration sealed = write(table, 0, 0, 9, 10);
            Path seal = Path.of(table.location().resolve(sealed.sealPath()));
            ObjectMapper json = new ObjectMapper();
            ObjectNode node = (ObjectNode) json.readTree(Files.readAllBytes(seal));
            assertThat(node.has("key_filter")).isTrue();
            node.remove("key_filter");
            Files.write(seal, json.writeValueAsBytes(node));
        }
        try (RolloutTable reopened = RolloutTable.open(TableLocation.local(dir), TableSettings.DEFAULTS, meters)) {
            assertThat(reopened.get("exp-4")).isPresent();
            assertThat(reopened.get("exp-absent")).isEmpty();
            assertThat(generations("opened"))
                    .as("no filter: both lookups open it")
                    .isEqualTo(2.0);
        }
    }

    @Test
    void theBaseHasARecordIdIndexThatLookupsUseAndThatStaysCompleteAfterMergesAndCompaction() {
        try (RolloutTable table = localTable("index", meters)) {
            for (long g = 0; g < 6; g++) {
                write(table, 0, g * 100, g * 100 + 99, 1_000_000);
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            }
            TableMaintenance.IndexResult optimized = table.maintenance().optimizeKeyIndex();
            assertThat(optimized.rebuilt())
                    .as("a new table's index covers no fragment: built whole")
                    .isTrue();
            assertThat(optimized.unindexedRowsBefore())
                    .as("merges add fragments the index does not cover yet")
                    .isEqualTo(600);
            assertThat(table.maintenance().optimizeKeyIndex().optimized())
                    .as("nothing left to take up")
                    .isFalse();
            try (org.apache.arrow.memory.RootAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(table.location().uri())
                            .build()) {
                assertThat(KeyIndex.find(base)).isPresent();
                assertThat(explain(base, "exp-250"))
                        .contains("ScalarIndexQuery")
                        .contains(KeyIndex.NAME);
            }
            table.maintenance().compact(1_000_000);
            TableMaintenance.IndexResult afterCompaction = table.maintenance().optimizeKeyIndex();
            assertThat(afterCompaction.rebuilt())
                    .as("compact() rebuilt it already")
                    .isFalse();
            assertThat(afterCompaction.unindexedRowsBefore()).isZero();
            for (int i = 0; i < 600; i += 37) {
                assertThat(table.get("exp-" + i))
                        .as("exp-%d after compaction", i)
                        .isPresent();
            }
            write(table, 0, 600, 699, 1_000_000);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            assertThat(table.maintenance()
                            .optimizeKeyIndex(new KeyIndexTiers(100, 8, 2_000_000))
                            .optimized())
                    .as("100 unindexed rows: not over the bound")
                    .isFalse();
            assertThat(table.maintenance()
                            .optimizeKeyIndex(new KeyIndexTiers(99, 8, 2_000_000))
                            .optimized())
                    .isTrue();
            assertThat(table.get("exp-650")).isPresent();
            assertThat(table.maintenance()
                            .collectGarbage(java.time.Duration.ZERO)
                            .deletedGenerations())
                    .isPositive();
            assertThat(table.get("exp-5")).isPresent();
        }
    }

    @Test
    void newFragmentsGetIndexSegmentsOfTheirOwnTieredUnderTheCapAndEveryKeyStaysFound() {
        try (RolloutTable table = localTable("segments", meters)) {
            String shard = ShardId.of(TOPIC, 0);
            write(table, 0, 0, 999, 1_000_000);
            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            // open segments: under 50 rows; at 3 open ones a take-up merges them, up to 100 rows
            KeyIndexTiers tiers = new KeyIndexTiers(0, 3, 100);
            assertThat(table.maintenance().optimizeKeyIndex(tiers).segments()).isEqualTo(1);
            UUID full = keySegments(table).get(0).uuid();
            List<Integer> segments = new ArrayList<>();
            for (long g = 1; g <= 6; g++) {
                write(table, 0, 1000 + g * 10, 1009 + g * 10, 1_000_000);
                table.merges().pass(MergeRequest.of(shard).limits(0, 0));
                TableMaintenance.IndexResult result = table.maintenance().optimizeKeyIndex(tiers);
                assertThat(result.optimized()).isTrue();
                assertThat(result.rebuilt()).isFalse();
                assertThat(result.unindexedRowsBefore()).isEqualTo(10);
                segments.add(result.segments());
                assertThat(keySegments(table)).hasSize(result.segments());
            }
            // one segment per take-up up to 3 open ones; the 4th merges the three (30 rows) with its own 10
            assertThat(segments).containsExactly(2, 3, 4, 2, 3, 4);
            assertThat(keySegments(table).stream().map(Index::uuid))
                    .as("the full segment (1,000 rows, over half the cap) is never rebuilt")
                    .contains(full);
            assertThat(table.maintenance().optimizeKeyIndex(tiers).optimized())
                    .as("every fragment is covered")
                    .isFalse();
            for (int i = 0; i < 1000; i += 41) {
                assertThat(table.get("exp-" + i)).as("exp-%d", i).isPresent();
            }
            for (long g = 1; g <= 6; g++) {
                assertThat(table.get("exp-" + (1000 + g * 10 + 5))).isPresent();
            }
            // A take-up never re-indexes more than the cap: 60 new rows and 3 open segments of 40, 10 and 10 rows
            // merge only the two smallest (60 + 20 <= 100); the full segment stays as it was.
            write(table, 0, 2000, 2059, 1_000_000);
            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            TableMaintenance.IndexResult capped = table.maintenance().optimizeKeyIndex(tiers);
            assertThat(capped.rebuilt()).isFalse();
            assertThat(capped.segments()).isEqualTo(3);
            assertThat(keySegments(table).stream().map(Index::uuid)).contains(full);
            assertThat(keySegments(table).stream()
                            .map(i -> i.fragments().orElseThrow().size())
                            .sorted()
                            .toList())
                    .as("fragments per segment: the 40-row one (4 merges), the merged 80 rows (3), the first")
                    .containsExactly(1, 3, 4);
            assertThat(table.get("exp-2050")).isPresent();
            assertThat(table.get("exp-7")).isPresent();
            assertThat(table.get("exp-1015")).isPresent();
        }
    }

    private static final String FRAGMENT_REUSE_INDEX = "__lance_frag_reuse";

    private static List<String> indexNames(RolloutTable table) {
        return indexes(table).stream().map(Index::name).toList();
    }

    private static List<Index> keySegments(RolloutTable table) {
        return indexes(table).stream()
                .filter(i -> KeyIndex.NAME.equals(i.name()))
                .toList();
    }

    private static List<Index> indexes(RolloutTable table) {
        try (org.apache.arrow.memory.RootAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                Dataset base = Dataset.open()
                        .allocator(allocator)
                        .uri(table.location().uri())
                        .build()) {
            return base.getIndexes();
        }
    }

    @Test
    void anIndexLeftBehindByACompactionIsRebuiltNotOptimizedSoNoKeyIsDropped() {
        try (RolloutTable table = localTable("crash-after-compact", meters)) {
            for (long g = 0; g < 5; g++) {
                write(table, 0, g * 100, g * 100 + 99, 1_000_000);
                table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            }
            table.maintenance().optimizeKeyIndex();
            // A compaction whose process died before it rebuilt the index.
            try (org.apache.arrow.memory.RootAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(table.location().uri())
                            .build()) {
                base.compact(TableMaintenance.compactionOptions(1_000_000));
            }
            write(table, 0, 500, 599, 1_000_000);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            MaintenanceSeams.dropRemapping(TableSeams.mergeRound(table).lance());
            assertThat(indexNames(table))
                    .as("the compaction's row remapping, which the index still needs, is not dropped")
                    .contains(FRAGMENT_REUSE_INDEX);
            // lance-format/lance#9270: optimizing now would silently drop the compacted rows from the index.
            assertThat(table.maintenance().optimizeKeyIndex().rebuilt()).isTrue();
            assertThat(indexNames(table))
                    .as("the remapping, read by every later commit, is dropped once the index was rebuilt")
                    .contains(KeyIndex.NAME)
                    .doesNotContain(FRAGMENT_REUSE_INDEX);
            for (int i = 0; i < 600; i += 7) {
                assertThat(table.get("exp-" + i)).as("exp-%d", i).isPresent();
            }
            assertThat(table.maintenance().optimizeKeyIndex().rebuilt())
                    .as("once rebuilt, optimizing is safe again")
                    .isFalse();
        }
    }

    private static String explain(Dataset base, String key) {
        StringBuilder plan = new StringBuilder();
        try (ArrowReader reader = base.sql("EXPLAIN SELECT record_id FROM dataset WHERE record_id = '" + key + "'")
                .intoBatchRecords()) {
            while (reader.loadNextBatch()) {
                plan.append(reader.getVectorSchemaRoot().contentToTSVString());
            }
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        return plan.toString();
    }

    @Test
    void anotherProcessesSealIsReadableWithinTheRefreshBoundAndNotFromAStaleSnapshotBefore() throws Exception {
        Path dir = freshDir("staleness");
        long refreshMs = 2_000;
        TableSettings settings = TableSettings.DEFAULTS.with(TableSettings.READ_REFRESH_MS, refreshMs);
        try (RolloutTable writer = RolloutTable.createOrOpen(TableLocation.local(dir), settings, meters);
                RolloutTable reader =
                        RolloutTable.open(TableLocation.local(dir), settings, new SimpleMeterRegistry())) {
            write(writer, 0, 0, 9, 10);
            long snapshot = System.nanoTime();
            // The reader's first read takes its snapshot now: the seal exists, so it is visible.
            assertThat(reader.get("exp-3")).isPresent();
            write(writer, 0, 10, 19, 20);
            long sealed = System.nanoTime();
            Optional<RolloutRow> stale = reader.get("exp-15");
            // The snapshot was at most this old during that read; past the interval a refresh is due, so a machine
            // too slow to write 10 rows within it cannot tell.
            long snapshotAgeMs = (System.nanoTime() - snapshot) / 1_000_000;
            if (snapshotAgeMs < refreshMs) {
                assertThat(stale)
                        .as("within the refresh interval the reader keeps its snapshot (%d ms old)", snapshotAgeMs)
                        .isEmpty();
            } else {
                System.out.printf(
                        "staleness: not checked: the snapshot was %d ms old at the read, past the %d ms interval%n",
                        snapshotAgeMs, refreshMs);
            }
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (reader.get("exp-15").isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            double visibleAfter = (System.nanoTime() - sealed) / 1e9;
            System.out.printf(
                    "staleness: another process's seal visible %.1f s after it, refresh interval %d ms%n",
                    visibleAfter, refreshMs);
            assertThat(reader.get("exp-15"))
                    .as("visible once the refresh interval has passed (polled for 60 s)")
                    .isPresent();
            assertThat(visibleAfter)
                    .as(
                            "visible the refresh interval later, not never (a hang guard, not a target): measured %.1f s",
                            visibleAfter)
                    .isLessThan(30.0);
        }
    }

    @Test
    void oneBrokenGenerationFailsOnlyTheLookupsThatNeedIt() throws Exception {
        try (RolloutTable table = localTable("broken", meters)) {
            write(table, 0, 0, 9, 1_000_000);
            SealedGeneration broken = write(table, 0, 10, 19, 1_000_000);
            dev.rolloutingest.embedded.FileTrees.deleteRecursively(
                    Path.of(table.location().resolve(broken.datasetPath())));
            List<String> fine = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                fine.add("exp-" + i);
            }
            int readable = 0;
            for (String key : fine) {
                if (table.get(key).isPresent()) {
                    readable++;
                }
            }
            assertThat(readable)
                    .as("keys whose filters exclude the broken generation read fine")
                    .isGreaterThanOrEqualTo(8);
            assertThatThrownBy(() -> table.get("exp-15"))
                    .isInstanceOf(RolloutTableException.GenerationUnreadable.class)
                    .hasMessageContaining("generation " + broken.generation());
        }
    }
}
