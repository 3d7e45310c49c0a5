package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.delete;
import static dev.rolloutingest.table.TableFixtures.deletesBeside;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.keys;
import static dev.rolloutingest.table.TableFixtures.latestVersion;
import static dev.rolloutingest.table.TableFixtures.restore;
import static dev.rolloutingest.table.TableFixtures.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.merge.MergePlan;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeSteps;
import dev.rolloutingest.table.merge.PreparedMerge;
import dev.rolloutingest.table.merge.RoundResult;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The interleavings where deletes, a second committer, snapshots and restores meet a merge round. Each drives the
 * table through its public API (two table instances on one location stand for two processes) and checks the base
 * with lance-core alone.
 */
class ExactlyOnceEdgesTest {
    private final RolloutGenerator generator = new RolloutGenerator("edge", 8, 5);

    private RolloutRow put(int partition, long offset, String id, long seconds) {
        return TableFixtures.put(generator, partition, offset, id, seconds);
    }

    private static String shard(int partition) {
        return ShardId.of(TOPIC, partition);
    }

    /** Runs {@code action} once, at the first commit of {@code table} that reaches {@code stage}. */
    private static void once(RolloutTable table, CommitStage stage, Runnable action) {
        AtomicBoolean done = new AtomicBoolean();
        TableSeams.failMergeCommitsAt(table, at -> {
            if (at == stage && done.compareAndSet(false, true)) {
                action.run();
            }
        });
    }

    @Test
    void aNewerDeleteMergedBeforeAnOlderPutOfAnotherPartitionStaysADelete() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-delete-order"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 1, List.of(put(1, 0, "x", 10), put(1, 1, "keep", 10))); // the put, ingested first
            write(table, 0, List.of(delete(0, 0, "x", 20), put(0, 1, "other", 20))); // the delete, later
            assertThat(table.get("x")).isEmpty();

            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0)); // the delete's shard merges first
            assertThat(table.get("x")).as("read between the two merges").isEmpty();
            assertThat(table.list(ListQuery.all(100)))
                    .extracting(RolloutRow::recordId)
                    .doesNotContain("x");

            table.merges().pass(MergeRequest.of(shard(1)).limits(8, 0)); // then the older put
            assertThat(table.get("x")).as("read after both merges").isEmpty();
            assertThat(table.list(ListQuery.all(100)))
                    .extracting(RolloutRow::recordId)
                    .containsExactlyInAnyOrder("keep", "other");
            assertThat(table.countRows()).isEqualTo(2);
            assertThat(table.generations().pending(shard(0))).isEmpty();
            assertThat(table.generations().pending(shard(1))).isEmpty();
            assertThat(liveKeys(location)).containsExactlyInAnyOrder("keep", "other");
        }
    }

    @Test
    void aCommitWhoseShardWasMergedByASecondCommitterAfterItsCheckNeverResurrectsADeletedKey() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-second-committer"));
        try (RolloutTable a = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RolloutTable b =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(a, 0, List.of(put(0, 0, "k", 0), put(0, 1, "j", 0)));
            a.merges().pass(MergeRequest.of(shard(0)).limits(8, 0)); // k and j in the base
            write(a, 0, List.of(put(0, 2, "k", 1))); // generation 3: an update of k
            write(a, 0, List.of(delete(0, 3, "k", 2))); // generation 4: k deleted

            // A merges generation 3; right after its check, B merges 3 and 4
            once(a, CommitStage.CHECKED, () -> b.merges()
                    .pass(MergeRequest.of(shard(0)).limits(8, 0)));
            try {
                a.merges().pass(MergeRequest.of(shard(0)).limits(1, 0));
            } catch (RuntimeException refused) {
                // refusing is right: its shard moved on
            }
            TableSeams.failMergeCommitsAt(a, null);
            assertThat(a.get("k")).as("k was deleted by generation 4").isEmpty();
            assertThat(liveKeys(location)).containsExactly("j");
            assertThat(a.generations().watermarks()).containsEntry(shard(0), 4L);
        }
    }

    @Test
    void anOlderPutMergedWhileADeletesRoundIsBetweenItsBaseCommitAndKeepingTheDeleteStaysOutOfTheBase()
            throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-delete-not-kept-yet"));
        try (RolloutTable a = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                RolloutTable b =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(a, 0, List.of(put(0, 0, "k", 0), put(0, 1, "j", 0)));
            a.merges().pass(MergeRequest.of(shard(0)).limits(8, 0)); // k and j in the base
            write(a, 0, List.of(delete(0, 2, "k", 20))); // k deleted
            write(a, 1, List.of(put(1, 0, "k", 10), put(1, 1, "i", 10))); // a put of k ingested before the delete

            // A's base commit removes k's value; before A keeps the delete beside the base, B merges the older put
            once(a, CommitStage.BASE_COMMITTED, () -> b.merges()
                    .pass(MergeRequest.of(shard(1)).limits(8, 0)));
            a.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            TableSeams.failMergeCommitsAt(a, null);

            assertThat(deletesBeside(location)).containsExactly("k=0@2");
            assertThat(baseRows(location))
                    .as("lance-core alone: no value older than a kept delete")
                    .containsOnlyKeys("j", "i");
            assertThat(a.get("k")).isEmpty();
            assertThat(a.generations().pending(shard(0))).isEmpty();
            assertThat(a.generations().pending(shard(1))).isEmpty();
        }
    }

    @Test
    void aJoinThatMeetsAKeyAnotherCommitterAppendedMeanwhileNeverHoldsItTwice() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-key-twice"));
        TableSettings joinEverything = TableSettings.DEFAULTS.with(TableSettings.MERGE_APPEND_NEW_KEYS, false);
        try (RolloutTable a = RolloutTable.createOrOpen(location, joinEverything, new SimpleMeterRegistry());
                RolloutTable b =
                        RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(a, 0, List.of(put(0, 0, "seed", 0)));
            a.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            // one keyless record_id in two partitions: partition 1's was ingested later and wins
            write(a, 0, List.of(put(0, 1, "k", 10)));
            write(a, 1, List.of(put(1, 0, "k", 20)));

            once(a, CommitStage.CHECKED, () -> b.merges()
                    .pass(MergeRequest.of(shard(1)).limits(8, 0)));
            a.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            TableSeams.failMergeCommitsAt(a, null);

            assertThat(baseRows(location)) // fails on a key seen twice
                    .containsEntry("k", "1@0")
                    .containsKey("seed");
            assertThat(a.get("k").orElseThrow().sourcePartition()).isEqualTo(1);
        }
    }

    @Test
    void aTailBetweenARoundsDataAndItsMarksHandsOverItsValuesOnce() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-tail-before-marks"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "a", 0), put(0, 1, "b", 0), put(0, 2, "c", 0)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            write(table, 0, List.of(put(0, 3, "b", 1)));
            // the round's rows are committed, its marks are not (a crash between the two): b is in the base and in
            // its still-pending generation, the same row; the tail's range of the base ends at the watermark
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.APPENDED) {
                    throw new IllegalStateException("crash before the marks");
                }
            });
            try {
                table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            } catch (RuntimeException crashed) {
                // as a crash would
            }
            TableSeams.failMergeCommitsAt(table, null);
            assertThat(baseRows(location)).containsEntry("b", "0@3");
            assertThat(keys(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0)))
                    .containsExactlyInAnyOrder("a", "b", "c");
            assertThat(keys(table.scan(ScanQuery.all(), TOPIC))).containsExactlyInAnyOrder("a", "b", "c");
            assertThat(table.get("b").orElseThrow().sourceOffset()).isEqualTo(3);
        }
    }

    @Test
    void aSnapshotBelowADeleteWhoseRoundFailedHoldsTheOlderValueItWillRemove() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-snapshot-unapplied-delete"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "a", 0)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            write(table, 1, List.of(put(1, 0, "k", 1))); // older than the delete, of another partition
            write(table, 0, List.of(delete(0, 1, "k", 2)));
            // the delete's round fails before its base commit: the base never took the delete in
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.CHECKED) {
                    throw new IllegalStateException("crash before the base commit");
                }
            });
            try {
                table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            } catch (RuntimeException crashed) {
                // as a crash would
            }
            TableSeams.failMergeCommitsAt(table, null);
            table.merges().pass(MergeRequest.of(shard(1)).limits(8, 0)); // k merges before its delete does
            assertThat(table.get("k")).isEmpty(); // the delete is pending

            TableSnapshots.Snapshot cut =
                    table.snapshots().create("below-the-delete", new TableSnapshots.Cut(TOPIC, Map.of(0, 1L, 1, 1L)));
            assertThat(cut.offsets()).containsEntry(TOPIC + ":0", 1L).containsEntry(TOPIC + ":1", 1L);
            assertThat(liveKeys(location, "below-the-delete")).containsExactlyInAnyOrder("a", "k");

            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            assertThat(baseRows(location)).containsOnlyKeys("a");
        }
    }

    @Test
    void aSnapshotNeverTagsAVersionMadeBetweenARoundsDataAndItsMarks() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-snapshot"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "a", 0), put(0, 1, "b", 0), put(0, 2, "c", 0)));
            write(table, 1, List.of(put(1, 0, "p1", 0)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            write(table, 0, List.of(delete(0, 3, "b", 1))); // generation 4 of shard 0

            // shard 0's round stops after its data is committed, right before its marks, as a crash there would
            long before = latestVersion(location);
            TableSeams.failMergeCommitsAt(table, stage -> {
                boolean dataIn;
                try {
                    dataIn = stage == CommitStage.APPENDED || latestVersion(location) > before;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                if (stage != CommitStage.MARKED && dataIn) {
                    throw new IllegalStateException("crash before the marks");
                }
            });
            try {
                table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            } catch (RuntimeException crashed) {
                // as a crash would
            }
            TableSeams.failMergeCommitsAt(table, null);
            table.merges().pass(MergeRequest.of(shard(1)).limits(8, 0)); // a later commit of another shard

            // a cut below shard 0's pending generation: b is in the snapshot
            TableSnapshots.Snapshot cut =
                    table.snapshots().create("cut", new TableSnapshots.Cut(TOPIC, Map.of(0, 3L, 1, 1L)));
            assertThat(cut.offsets()).containsEntry(TOPIC + ":0", 3L);
            assertThat(table.get("b", "cut")).isPresent();
            List<String> expected =
                    cut.offsets().get(TOPIC + ":1") == 1L ? List.of("a", "b", "c", "p1") : List.of("a", "b", "c");
            assertThat(liveKeys(location, "cut")).containsExactlyInAnyOrderElementsOf(expected);
        }
    }

    @Test
    void aRoundCommittedInPartsHoldsInEachPartTheNewestRowsOfTheGenerationsItMarks() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-round-parts"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 2, List.of(put(2, 0, "k", 0)));
            table.merges().pass(MergeRequest.of(shard(2)).limits(8, 0)); // k's first value in the base
            write(table, 0, List.of(delete(0, 0, "k", 10), put(0, 1, "a", 10))); // k deleted in partition 0
            write(table, 1, List.of(put(1, 0, "k", 20), put(1, 1, "b", 20))); // and written again later in 1

            // the round of both shards fails once and is committed in halves; a snapshot right after the first half
            AtomicBoolean failed = new AtomicBoolean();
            AtomicBoolean snapped = new AtomicBoolean();
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.CHECKED && failed.compareAndSet(false, true)) {
                    throw new IllegalStateException("the whole round's commit fails once");
                }
                if (stage == CommitStage.MARKED && snapped.compareAndSet(false, true)) {
                    table.snapshots().create("half", new TableSnapshots.Cut(TOPIC, Map.of(0, 2L, 1, 0L, 2, 1L)));
                }
            });
            List<MergePlan> plans = MergeSteps.plan(table, List.of(shard(0), shard(1)), 8, 0);
            List<PreparedMerge> prepared = new java.util.ArrayList<>();
            for (MergePlan plan : plans) {
                prepared.add(MergeSteps.prepare(table, plan));
            }
            RoundResult round = MergeSteps.commit(table, prepared);
            TableSeams.failMergeCommitsAt(table, null);
            assertThat(round.failed()).isEmpty();
            assertThat(round.commits()).isEqualTo(3); // the failed one, then a commit per half
            assertThat(snapped).isTrue();

            // the snapshot holds partition 0's generation, not partition 1's: k is deleted there
            assertThat(table.snapshots().get("half").offsets())
                    .containsEntry(TOPIC + ":0", 2L)
                    .containsEntry(TOPIC + ":1", 0L);
            assertThat(table.get("k", "half")).isEmpty();
            assertThat(liveKeys(location, "half")).containsExactlyInAnyOrder("a");
            // and the table ends with partition 1's newer value
            assertThat(table.get("k").orElseThrow().sourcePartition()).isEqualTo(1);
            assertThat(liveKeys(location)).containsExactlyInAnyOrder("a", "b", "k");
        }
    }

    @Test
    void aRestoreOfTheBaseToAVersionBeforeADeleteMakesTheKeyFilterRebuild() throws Exception {
        TableLocation location = TableLocation.local(freshDir("edge-restore"));
        long beforeDelete;
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "k", 0), put(0, 1, "j", 0)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            beforeDelete = latestVersion(location);
            write(table, 0, List.of(delete(0, 2, "k", 1)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            // nothing older than the delete is pending: it leaves the base
            assertThat(table.maintenance().dropDeletes(java.time.Duration.ZERO).dropped())
                    .isEqualTo(1);
        }
        // a committer started after the delete builds its filter from a base without k
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 3, "m", 2)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            assertThat(liveKeys(location)).containsExactlyInAnyOrder("j", "m");

            restore(location, beforeDelete); // an operator rolls the base back: k is there again
            write(table, 0, List.of(put(0, 4, "k", 3)));
            table.merges().pass(MergeRequest.of(shard(0)).limits(8, 0));
            assertThat(baseRows(location)).containsEntry("k", "0@4"); // fails on a key seen twice
        }
    }

    /** The keys a plain lance-core reader finds live in the base: rows that are not deletes. */
    private static List<String> liveKeys(TableLocation location) throws Exception {
        return liveKeys(location, null);
    }

    private static List<String> liveKeys(TableLocation location, String tag) throws Exception {
        return TableFixtures.liveBaseKeys(location, tag);
    }
}
