package dev.rolloutingest.table.snapshots;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.snapshots.TableSnapshots.Cut;
import dev.rolloutingest.table.snapshots.TableSnapshots.Snapshot;
import dev.rolloutingest.table.snapshots.TableSnapshots.SnapshotException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/**
 * Snapshots are lance tags on a base version holding exactly the records below their recorded offsets; they never
 * change, whatever is merged, compacted or collected later, and a plain lance-core reader at the tag sees them.
 */
class TableSnapshotsTest {
    private static final Instant T0 = Instant.parse("2026-12-01T00:00:00Z");

    /** Offsets [first, first + n) of a partition, ids p{partition}-key-(start..), ingested at T0 + seconds. */
    private static void write(RolloutTable table, int partition, long first, int start, int n, long seconds) {
        RolloutGenerator generator = new RolloutGenerator("snap", 8, partition);
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Rollout rollout = generator.rollout(first + i, (int) first + i);
            rollout.setRecordId("p" + partition + "-key-" + (start + i));
            rows.add(new RolloutRow(rollout, partition, first + i, T0.plusSeconds(seconds)));
        }
        table.generations().write(TOPIC, partition, first, first + n - 1, rows, n * 100L);
    }

    private static Cut cut(Map<Integer, Long> offsets) {
        return new Cut(TOPIC, offsets);
    }

    @Test
    void aSnapshotHoldsEverySealedRecordAndNeverChangesAfterMergesCompactionAndGc() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-stable"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 100, 0);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0)); // merged
            write(table, 0, 100, 100, 100, 1); // pending
            write(table, 1, 0, 0, 50, 2); // pending, another partition

            Snapshot snapshot = table.snapshots().create("run-1", Cut.everythingSealed(TOPIC));
            assertThat(snapshot.offsets())
                    .containsExactlyInAnyOrderEntriesOf(Map.of(TOPIC + ":0", 200L, TOPIC + ":1", 50L));
            assertThat(snapshot.rows()).isEqualTo(250);
            Map<String, String> first = baseRows(location, "run-1");
            assertThat(first).hasSize(250);
            List<RolloutRow> listed = table.list(new ListQuery(null, null, 1000, 0, true), "run-1");
            assertThat(listed).hasSize(250);
            RolloutRow before = table.get("p0-key-150", "run-1").orElseThrow();
            assertThat(before.sourceOffset()).isEqualTo(150);

            // later: a rewrite of key 150, new keys, merged, compacted, collected
            write(table, 0, 200, 150, 100, 10); // p0-key-150..249: 50 rewritten, 50 new
            write(table, 1, 50, 50, 50, 11);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            table.maintenance().compact(1_000_000);
            table.maintenance().optimizeKeyIndex();
            table.maintenance().collectGarbage(Duration.ZERO);
            assertThat(table.get("p0-key-150").orElseThrow().sourceOffset()).isEqualTo(200);

            assertThat(baseRows(location, "run-1")).isEqualTo(first); // lance-core alone, at the tag
            assertThat(table.list(new ListQuery(null, null, 1000, 0, true), "run-1"))
                    .containsExactlyInAnyOrderElementsOf(listed);
            assertThat(table.get("p0-key-150", "run-1").orElseThrow()).isEqualTo(before);
            assertThat(table.get("p0-key-249", "run-1")).isEmpty();
            // every record below the recorded offsets is in, none at or above
            for (Map.Entry<String, String> row : first.entrySet()) {
                String[] at = row.getValue().split("@");
                long recorded = snapshot.offsets().get(TOPIC + ":" + at[0]);
                assertThat(Long.parseLong(at[1])).isLessThan(recorded);
            }
            assertThat(table.snapshots().list()).extracting(Snapshot::name).containsExactly("run-1");
        }
    }

    @Test
    void aCutInsideAGenerationEndsAtItsFirstOffsetAndMergesNothingAbove() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-cut"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int g = 0; g < 3; g++) {
                write(table, 0, g * 100L, g * 100, 100, g); // [0,99] [100,199] [200,299], all pending
            }
            Snapshot snapshot = table.snapshots().create("cut-150", cut(Map.of(0, 150L)));
            assertThat(snapshot.offsets()).containsExactly(Map.entry(TOPIC + ":0", 100L));
            assertThat(snapshot.requestedCut()).containsExactly(Map.entry(TOPIC + ":0", 150L));
            assertThat(snapshot.rows()).isEqualTo(100);
            assertThat(baseRows(location, "cut-150"))
                    .hasSize(100)
                    .containsKey("p0-key-99")
                    .doesNotContainKey("p0-key-100");
            assertThat(table.generations().pending(ShardId.of(TOPIC, 0))).hasSize(2); // nothing above the cut merged
        }
    }

    @Test
    void aCutBelowWhatIsMergedTakesTheNewestBaseVersionAtOrBelowIt() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-past"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int g = 0; g < 3; g++) {
                write(table, 0, g * 100L, g * 100, 100, g);
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            }
            Snapshot snapshot = table.snapshots().create("past", cut(Map.of(0, 200L)));
            assertThat(snapshot.offsets()).containsExactly(Map.entry(TOPIC + ":0", 200L));
            assertThat(baseRows(location, "past")).hasSize(200).doesNotContainKey("p0-key-200");
        }
    }

    @Test
    void aVersionBetweenAnAppendAndItsMarksIsNeverTagged() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-mid-round"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RolloutTable other = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 100, 0);
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, 100, 100, 100, 1);
            List<Snapshot> taken = new ArrayList<>();
            // The second round has appended key-100..199 (the base's newest version) and not yet moved the marks.
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.APPENDED && taken.isEmpty()) {
                    taken.add(other.snapshots().create("mid", cut(Map.of(0, 100L))));
                }
            });
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            TableSeams.failMergeCommitsAt(table, null);

            Snapshot mid = taken.get(0);
            assertThat(mid.offsets()).containsExactly(Map.entry(TOPIC + ":0", 100L));
            assertThat(mid.rows()).isEqualTo(100);
            assertThat(baseRows(location, "mid")).hasSize(100).doesNotContainKey("p0-key-100");
        }
    }

    @Test
    void badRequestsFailNamingTheProblemAndChangeNothing() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-bad"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 100, 0);
            write(table, 1, 0, 0, 100, 0);
            TableSnapshots snapshots = table.snapshots();
            assertThatThrownBy(() -> snapshots.create("../evil", Cut.everythingSealed(TOPIC)))
                    .isInstanceOfSatisfying(SnapshotException.class, e -> assertThat(e.kind())
                            .isEqualTo(SnapshotException.Kind.BAD_REQUEST))
                    .hasMessageContaining("'../evil' is not allowed");
            assertThatThrownBy(() -> snapshots.create("s", cut(Map.of(0, 100L, 1, 500L))))
                    .isInstanceOf(SnapshotException.class)
                    .hasMessageContaining(TOPIC + ":1=500 is beyond what is sealed: records below offset 100 are");
            assertThatThrownBy(() -> snapshots.create("s", cut(Map.of(0, 100L))))
                    .isInstanceOf(SnapshotException.class)
                    .hasMessageContaining("must name every partition")
                    .hasMessageContaining(TOPIC + ":1");
            assertThat(table.generations().pending(ShardId.of(TOPIC, 0))).hasSize(1); // nothing merged
            assertThat(snapshots.list()).isEmpty();

            snapshots.create("s", Cut.everythingSealed(TOPIC));
            assertThatThrownBy(() -> snapshots.create("s", Cut.everythingSealed(TOPIC)))
                    .isInstanceOfSatisfying(SnapshotException.class, e -> assertThat(e.kind())
                            .isEqualTo(SnapshotException.Kind.CONFLICT))
                    .hasMessageContaining("Snapshot s already exists");
            for (Runnable unknown : List.<Runnable>of(
                    () -> snapshots.drop("nope"), () -> table.get("p0-key-1", "nope"), () -> snapshots.get("nope"))) {
                assertThatThrownBy(unknown::run)
                        .isInstanceOfSatisfying(SnapshotException.class, e -> assertThat(e.kind())
                                .isEqualTo(SnapshotException.Kind.NOT_FOUND))
                        .hasMessageContaining("No snapshot named nope");
            }
        }
    }

    @Test
    void gcKeepsATaggedVersionAndDroppingTheSnapshotLetsItGo() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-gc"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 100, 0);
            long version = table.snapshots()
                    .create("keep", Cut.everythingSealed(TOPIC))
                    .version();
            write(table, 0, 100, 0, 100, 1); // every key rewritten: the tagged rows live only in old files
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            table.maintenance().compact(1_000_000);
            table.maintenance().collectGarbage(Duration.ZERO); // lance's default cleanup would fail here on the tag
            assertThat(versions(location)).contains(version);
            assertThat(baseRows(location, "keep")).hasSize(100).containsEntry("p0-key-5", "0@5");

            table.snapshots().drop("keep");
            table.maintenance().collectGarbage(Duration.ZERO);
            assertThat(versions(location)).doesNotContain(version);
            assertThat(table.snapshots().list()).isEmpty();
        }
    }

    @Test
    void anExportIsAStandaloneDatasetWithTheOffsetsInItsConfig() throws Exception {
        TableLocation location = TableLocation.local(freshDir("snap-export"));
        TableLocation target = TableLocation.local(freshDir("snap-export-out"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, 0, 0, 120, 0);
            table.snapshots().create("train", Cut.everythingSealed(TOPIC));
            write(table, 0, 120, 120, 30, 1);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));

            assertThat(table.snapshots().export("train", target)).isEqualTo(120);
            try (RootAllocator allocator = new RootAllocator();
                    Dataset exported = Dataset.open()
                            .allocator(allocator)
                            .uri(target.uri())
                            .build()) {
                assertThat(exported.getConfig()).containsEntry(SnapshotTags.OFFSETS, TOPIC + ":0=120");
                assertThat(exported.countRows()).isEqualTo(120);
            }
            assertThat(baseRows(target)).isEqualTo(baseRows(location, "train"));
            assertThatThrownBy(() -> table.snapshots().export("train", target))
                    .isInstanceOfSatisfying(SnapshotException.class, e -> assertThat(e.kind())
                            .isEqualTo(SnapshotException.Kind.CONFLICT))
                    .hasMessageContaining("already holds a dataset");
        }
    }

    private static List<Long> versions(TableLocation location) {
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            return base.listVersions().stream().map(v -> v.getId()).toList();
        }
    }
}
