package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/** The two ways a merge commit joins its source to the base: the same table either way, and which lance takes. */
class MergeJoinTest {
    private static final long ALWAYS_SCAN = Long.MAX_VALUE;
    private static final long ALWAYS_INDEX = 0;

    /**
     * Three rounds of two partitions whose generations rewrite each other's keys (within a partition the offset
     * decides, across partitions ingested_at), the base indexed between rounds.
     */
    private static Map<String, String> mergeWorkload(
            SimpleMeterRegistry meters, long scanJoinMaxBaseRows, boolean appendNewKeys) {
        return mergeWorkload(meters, scanJoinMaxBaseRows, appendNewKeys, 0);
    }

    /** @param keyAddressesBytes the committer's book of key addresses (0: off, every key through the join) */
    private static Map<String, String> mergeWorkload(
            SimpleMeterRegistry meters, long scanJoinMaxBaseRows, boolean appendNewKeys, long keyAddressesBytes) {
        Instant t0 = Instant.parse("2026-12-01T00:00:00Z");
        try (RolloutTable table = localTable(
                "join-" + scanJoinMaxBaseRows,
                meters,
                TableSettings.DEFAULTS
                        .with(TableSettings.MERGE_SCAN_JOIN_MAX_BASE_ROWS, scanJoinMaxBaseRows)
                        .with(TableSettings.MERGE_APPEND_NEW_KEYS, appendNewKeys)
                        .with(TableSettings.MERGE_KEY_ADDRESSES_BYTES, keyAddressesBytes))) {
            List<String> shards = List.of(ShardId.of(TOPIC, 0), ShardId.of(TOPIC, 1));
            for (int round = 0; round < 3; round++) {
                for (int p = 0; p < 2; p++) {
                    RolloutGenerator generator = new RolloutGenerator("join", 16, p);
                    List<RolloutRow> rows = new ArrayList<>();
                    long first = round * 300L;
                    for (long offset = first; offset < first + 300; offset++) {
                        // keys 0..399: rewritten by later rounds and by the other partition
                        Rollout rollout = generator.rollout(offset, round);
                        rollout.setRecordId("k-" + ((offset * 7 + p * 150) % 400));
                        // partition 1 ingested later in rounds 0 and 2, earlier in round 1
                        Instant at = t0.plusSeconds(round * 10L + (round == 1 ? 1 - p : p));
                        rows.add(new RolloutRow(rollout, p, offset, at));
                    }
                    table.generations().write(TOPIC, p, first, first + 299, rows, 300 * 100L);
                }
                for (String shard : shards) {
                    table.merges().pass(MergeRequest.of(shard).limits(8, 0));
                }
                table.maintenance().optimizeKeyIndex();
            }
            Map<String, String> contents = new TreeMap<>();
            for (int k = 0; k < 400; k++) {
                table.get("k-" + k)
                        .ifPresent(row -> contents.put(
                                row.rollout().getRecordId().toString(),
                                row.sourcePartition() + "@" + row.sourceOffset()));
            }
            assertThat(table.countBaseRows()).isEqualTo(contents.size());
            return contents;
        }
    }

    private static double commits(SimpleMeterRegistry meters, MergeJoin join) {
        return meters.get("rollout.merge.join.commits")
                .tag("join", join.tag())
                .counter()
                .count();
    }

    @Test
    void theScanJoinAndTheIndexJoinLeaveTheSameRowsNewestWins() {
        SimpleMeterRegistry scanMeters = new SimpleMeterRegistry();
        SimpleMeterRegistry indexMeters = new SimpleMeterRegistry();
        Map<String, String> scanned = mergeWorkload(scanMeters, ALWAYS_SCAN, false);
        Map<String, String> indexed = mergeWorkload(indexMeters, ALWAYS_INDEX, false);

        assertThat(scanned).hasSize(400).isEqualTo(indexed);
        assertThat(commits(scanMeters, MergeJoin.SCAN)).isEqualTo(6);
        assertThat(commits(scanMeters, MergeJoin.INDEX)).isZero();
        assertThat(commits(indexMeters, MergeJoin.INDEX)).isEqualTo(6);
        assertThat(commits(indexMeters, MergeJoin.SCAN)).isZero();
        // k-350 is last written in round 2 by partition 0 at offset 850 and by partition 1 at offset 600:
        // across partitions ingested_at decides, and partition 1 was ingested later in round 2.
        assertThat(scanned.get("k-350")).isEqualTo("1@600");
        // k-0: partition 0 at 0, 400, 800 and partition 1 at 150, 550; 800 is the only round-2 write.
        assertThat(scanned.get("k-0")).isEqualTo("0@800");
    }

    @Test
    void theBookOfKeyAddressesLeavesTheSameRowsAsTheJoins() {
        SimpleMeterRegistry joinMeters = new SimpleMeterRegistry();
        SimpleMeterRegistry bookMeters = new SimpleMeterRegistry();
        Map<String, String> joined = mergeWorkload(joinMeters, ALWAYS_INDEX, true);
        Map<String, String> placed =
                mergeWorkload(bookMeters, ALWAYS_INDEX, true, TableSettings.DEFAULTS.mergeKeyAddressesBytes());

        assertThat(placed).hasSize(400).isEqualTo(joined);
        double found = bookMeters
                .get("rollout.merge.key.addresses.lookups")
                .tag("result", "found")
                .counter()
                .count();
        assertThat(found).isGreaterThan(1000); // 1,400 rows of keys the base held, all but the first's placed
        assertThat(commits(bookMeters, MergeJoin.INDEX)).isLessThan(commits(joinMeters, MergeJoin.INDEX));
    }

    @Test
    void theKeyFilterLeavesTheSameRowsAsLookingUpEveryKey() {
        SimpleMeterRegistry lookupMeters = new SimpleMeterRegistry();
        SimpleMeterRegistry filterMeters = new SimpleMeterRegistry();
        Map<String, String> lookedUp = mergeWorkload(lookupMeters, ALWAYS_SCAN, false);
        Map<String, String> filtered = mergeWorkload(filterMeters, ALWAYS_SCAN, true);

        assertThat(filtered).hasSize(400).isEqualTo(lookedUp);
        // 6 passes of 300 distinct keys each over 400 keys: each key is new to the base once (appended), every
        // other write of it finds it there (joined, or superseded by a newer row)
        for (SimpleMeterRegistry meters : List.of(filterMeters, lookupMeters)) {
            assertThat(rows(meters, MergePath.APPEND) + rows(meters, MergePath.ADOPT))
                    .isEqualTo(400);
            assertThat(rows(meters, MergePath.JOIN) + rows(meters, MergePath.SUPERSEDED))
                    .isEqualTo(1800 - 400);
        }
        // the first commit's keys are all new to the empty base: the filter spares it the lookup
        assertThat(commits(filterMeters, MergeJoin.SCAN)).isLessThan(commits(lookupMeters, MergeJoin.SCAN));
    }

    private static double rows(SimpleMeterRegistry meters, MergePath path) {
        return TableFixtures.mergedRows(meters, path);
    }

    @Test
    void aSmallSourceIsJoinedThroughTheIndexWhateverTheBaseSize() {
        assertThat(MergeJoin.forCommit(0, 10, ALWAYS_SCAN)).isEqualTo(MergeJoin.INDEX);
        assertThat(MergeJoin.forCommit(1_000, 1_000_000, ALWAYS_SCAN)).isEqualTo(MergeJoin.INDEX);
        assertThat(MergeJoin.forCommit(1_001, 1_000_000, ALWAYS_SCAN)).isEqualTo(MergeJoin.SCAN);
        assertThat(MergeJoin.forCommit(1_001, 1_000_000, ALWAYS_INDEX)).isEqualTo(MergeJoin.INDEX);
    }

    @Test
    void theBaseSizeChoosesTheJoin() {
        assertThat(MergeJoin.forBase(2_000_000, 2_000_000)).isEqualTo(MergeJoin.SCAN);
        assertThat(MergeJoin.forBase(2_000_001, 2_000_000)).isEqualTo(MergeJoin.INDEX);
        assertThat(MergeJoin.forBase(0, 0)).isEqualTo(MergeJoin.INDEX);
        assertThat(MergeJoin.forBase(1, 0)).isEqualTo(MergeJoin.INDEX);
    }

    /** Both lookups find every base row of the keys, with the same addresses and order, and nothing else. */
    @Test
    void theIndexAndTheScanFindTheSameBaseRows() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = localTable("lookups", meters);
                RootAllocator allocator = new RootAllocator()) {
            TableFixtures.write(table, 0, 0, 999, 1000);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            table.maintenance().optimizeKeyIndex();
            TableFixtures.write(table, 0, 1000, 1099, 2000); // 100 more keys, not indexed yet
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            List<String> keys = new java.util.ArrayList<>();
            for (int i = 0; i < 1100; i += 7) {
                keys.add("exp-" + i);
            }
            keys.add("not-there");
            try (Dataset base = openBase(table, allocator)) {
                var byIndex = MergeJoin.INDEX.find(base, keys);
                var byScan = MergeJoin.SCAN.find(base, keys);
                assertThat(byIndex).hasSize(keys.size() - 1).isEqualTo(byScan);
                assertThat(byIndex).doesNotContainKey("not-there");
                assertThat(byIndex.get("exp-1050")).singleElement().satisfies(row -> {
                    assertThat(row.offset()).isEqualTo(1050);
                    assertThat(row.partition()).isZero();
                });
            }
        }
    }

    private static Dataset openBase(RolloutTable table, RootAllocator allocator) {
        return Dataset.open().allocator(allocator).uri(table.location().uri()).build();
    }
}
