package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableFixtures.T0;
import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.appendWithLance;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.delete;
import static dev.rolloutingest.table.TableFixtures.deletesBeside;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.keys;
import static dev.rolloutingest.table.TableFixtures.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/**
 * A delete is a row of the generation (a tombstone) that wins or loses by the same rule as values: reads stop
 * returning the key once it is sealed, the merge writes it in place of the base row (kept there, hidden from reads,
 * until no older value can merge), and a later value comes back. Every check of the base reads it with lance-core
 * alone.
 */
class DeletesTest {
    private final RolloutGenerator generator = new RolloutGenerator("del", 8, 3);

    private RolloutRow put(int partition, long offset, String id, long seconds) {
        return TableFixtures.put(generator, partition, offset, id, seconds);
    }

    private List<RolloutRow> puts(int partition, long firstOffset, int n, long seconds) {
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            rows.add(put(partition, firstOffset + i, "key-" + i, seconds));
        }
        return rows;
    }

    private static double deletes(SimpleMeterRegistry meters, String result) {
        return meters.get("rollout.merge.deletes")
                .tag("result", result)
                .counter()
                .count();
    }

    @Test
    void aSealedDeleteHidesTheKeyAndTheMergeReplacesTheBaseRowWithIt() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("deletes"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            write(table, 0, puts(0, 0, 10, 0)); // key-0..9
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 10, "key-3", 1), put(0, 11, "key-20", 1), delete(0, 12, "nope", 1)));

            assertThat(table.get("key-3")).isEmpty(); // pending: hidden at once
            assertThat(table.list(ListQuery.all(100)))
                    .extracting(RolloutRow::recordId)
                    .doesNotContain("key-3", "nope")
                    .contains("key-20");
            assertThat(table.countRows()).isEqualTo(10);

            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(live(location))
                    .hasSize(10)
                    .doesNotContain("key-3", "nope")
                    .contains("key-20");
            // the base holds live rows only: its deletes are kept beside it
            assertThat(baseRows(location)).hasSize(10).doesNotContainKeys("key-3", "nope");
            assertThat(deletesBeside(location)).containsExactlyInAnyOrder("key-3=0@10", "nope=0@12");
            assertThat(table.get("key-3")).isEmpty();
            assertThat(table.list(ListQuery.all(100))).hasSize(10);
            assertThat(table.countRows()).isEqualTo(10);
            assertThat(deletes(meters, "applied")).isEqualTo(1);
            assertThat(deletes(meters, "no-op")).isEqualTo(1); // "nope" never existed
            assertThat(table.generations().pending(shard)).isEmpty();

            // deleting key-3 again replaces the delete the base keeps: a no-op, not a second applied delete
            write(table, 0, List.of(delete(0, 13, "key-3", 2)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(deletes(meters, "applied")).isEqualTo(1);
            assertThat(deletes(meters, "no-op")).isEqualTo(2);
            assertThat(baseRows(location)).hasSize(10).doesNotContainKey("key-3");
            assertThat(deletesBeside(location)).contains("key-3=0@13").hasSize(3);

            // nothing older is pending: maintenance drops them
            assertThat(table.maintenance()
                            .dropDeletes(Duration.between(T0, Instant.now()).plusDays(1))
                            .dropped())
                    .as("younger than the retention")
                    .isZero();
            assertThat(table.maintenance().dropDeletes(Duration.ZERO).dropped()).isEqualTo(3); // key-3 twice, nope
            assertThat(baseRows(location)).hasSize(10).doesNotContainKeys("key-3", "nope");
            assertThat(deletesBeside(location)).isEmpty();
            assertThat(table.get("key-3")).isEmpty();
            assertThat(table.countRows()).isEqualTo(10);
        }
    }

    @Test
    void aDeleteStaysWhileAnOlderValueOfAnotherPartitionIsPending() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-held"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            Instant now = Instant.now();
            write(
                    table,
                    1,
                    List.of(new RolloutRow(
                            put(1, 0, "x", 0).rollout(),
                            1,
                            0,
                            now.minusSeconds(60)))); // ingested a minute ago, pending
            write(table, 0, List.of(new RolloutRow(Tombstones.of("x", now), 0, 0, now.minusSeconds(30))));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            // the delete is merged (kept beside the base), the older put still pending: every read path hides x
            assertThat(baseRows(location)).isEmpty();
            assertThat(deletesBeside(location)).containsExactly("x=0@0");
            assertThat(table.get("x")).isEmpty();
            assertThat(table.list(ListQuery.all(10))).isEmpty();
            assertThat(table.countRows()).isZero();
            assertThat(keys(table.scan(ScanQuery.all(), TOPIC))).isEmpty();
            assertThat(keys(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0)))
                    .as("the tail hands over the delete, the key's newest row")
                    .containsExactly("x(deleted)");
            assertThat(table.maintenance().dropDeletes(Duration.ZERO).dropped())
                    .as("an older put of x is pending")
                    .isZero();
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            assertThat(table.get("x")).isEmpty();
            assertThat(table.maintenance().dropDeletes(Duration.ZERO).dropped()).isEqualTo(1);
            assertThat(baseRows(location)).isEmpty();
        }
    }

    @Test
    void aPutMergedAfterADeleteIsTheKeysNewestRowAndTheTailHandsOverNoDelete() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-then-put"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "k", 0)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 1, "k", 1)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(put(0, 2, "k", 2)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(baseRows(location)).containsExactly(java.util.Map.entry("k", "0@2"));
            assertThat(deletesBeside(location)).containsExactly("k=0@1"); // older than the base's value
            assertThat(table.get("k").orElseThrow().sourceOffset()).isEqualTo(2);
            assertThat(keys(table.scan(ScanQuery.all(), TOPIC))).containsExactly("k");
            assertThat(keys(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0)))
                    .as("the delete is no longer the key's newest row")
                    .containsExactly("k");
            assertThat(keys(table.tail(
                            table.startCursor(TOPIC),
                            TOPIC,
                            ScanQuery.all().withColumns(List.of(RolloutSchema.RECORD_ID, RolloutSchema.REWARD)),
                            0)))
                    .as("a narrow projection")
                    .containsExactly("k");
            write(table, 0, List.of(delete(0, 3, "k", 3)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(keys(table.tail(
                            table.startCursor(TOPIC),
                            TOPIC,
                            ScanQuery.all().withColumns(List.of(RolloutSchema.RECORD_ID, RolloutSchema.REWARD)),
                            0)))
                    .as("deleted again, nothing pending: the newest delete only")
                    .containsExactly("k(deleted)");
        }
    }

    @Test
    void aKeyWrittenAgainAfterItsDeleteIsJoinedLaterOnceTheDeleteIsDropped() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-revived"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "k", 0), put(0, 1, "other", 0)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 2, "k", 1)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
        }
        // a committer that starts now builds its key filter from a base without k
        try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 3, "k", 2))); // replaces only the delete kept beside the base
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(baseRows(location)).containsEntry("k", "0@3");
            assertThat(table.maintenance().dropDeletes(Duration.ZERO).dropped()).isEqualTo(1);
            // with the delete gone, only the key filter tells that the base holds k now
            write(table, 0, List.of(put(0, 4, "k", 3)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(baseRows(location)).hasSize(2).containsEntry("k", "0@4");
            assertThat(table.get("k").orElseThrow().sourceOffset()).isEqualTo(4);
        }
    }

    @Test
    void deletesAnOlderVersionKeptInTheBaseAreMovedBesideIt() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-legacy"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, 3, 0));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            // a delete row in the base itself, as earlier versions merged them (key-1's value replaced by it)
            Instant at = T0.plusSeconds(1);
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(location.uri())
                            .build()) {
                base.delete(RolloutSchema.RECORD_ID + " = 'key-1'");
            }
            appendWithLance(location, List.of(new RolloutRow(Tombstones.of("key-1", at), 0, 3, at)));
            assertThat(table.get("key-1")).isEmpty();
            assertThat(table.maintenance()
                            .dropDeletes(Duration.between(T0, Instant.now()).plusDays(1))
                            .dropped())
                    .isZero();
            assertThat(baseRows(location)).containsOnlyKeys("key-0", "key-2");
            assertThat(deletesBeside(location)).containsExactly("key-1=0@3");
            assertThat(table.get("key-1")).isEmpty();
            assertThat(table.countRows()).isEqualTo(2);
        }
    }

    @Test
    void aDeleteKeptBesideTheBaseBeforeItsRoundsMarksIsHandedOverOnceByATail() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-before-commit"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, 3, 0)); // key-0..2 merged
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 3, "key-1", 1)));
            // the round commits the base and keeps its delete beside it, then fails before its marks, as a crash would
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.APPENDED) {
                    throw new IllegalStateException("crash before the marks");
                }
            });
            try {
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            } catch (RuntimeException crashed) {
                // as a crash would
            }
            TableSeams.failMergeCommitsAt(table, null);
            assertThat(deletesBeside(location)).containsExactly("key-1=0@3");
            assertThat(baseRows(location)).containsOnlyKeys("key-0", "key-2");
            write(table, 1, List.of(put(1, 0, "other", 2))); // another shard's merge: readers take the new deletes
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));

            assertThat(table.get("key-1")).isEmpty();
            assertThat(keys(table.scan(ScanQuery.all(), TOPIC))).containsExactlyInAnyOrder("key-0", "key-2", "other");
            assertThat(keys(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0)))
                    .as("the pending delete, once, though the same delete is kept beside the base")
                    .containsExactlyInAnyOrder("key-0", "key-2", "key-1(deleted)", "other");

            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(deletesBeside(location)).containsExactly("key-1=0@3"); // not appended twice
            assertThat(baseRows(location)).containsOnlyKeys("key-0", "key-2", "other");
            assertThat(keys(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0)))
                    .containsExactlyInAnyOrder("key-0", "key-2", "key-1(deleted)", "other");
        }
    }

    @Test
    void putsAndDeletesAlternatingAcrossTwoPartitionsEndWithTheLastEvenAfterARestart() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-alternating"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "k", 0), put(0, 1, "other", 0)));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            write(table, 1, List.of(delete(1, 0, "k", 1)));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            assertThat(baseRows(location)).doesNotContainKey("k");
        }
        // a restarted merge process: its key filter of the base is built without k, whose delete is kept beside it
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 2, "other", 2)));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0)); // the filter is built
            write(table, 0, List.of(put(0, 3, "k", 2)));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(baseRows(location)).containsEntry("k", "0@3");
            write(table, 1, List.of(delete(1, 1, "k", 3)));
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            assertThat(baseRows(location)).doesNotContainKey("k");
            assertThat(table.get("k")).isEmpty();
        }
    }

    @Test
    void deletesKeptOverManyRoundsAreCompactedIntoFewFragments() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-compacted"));
        String shard = ShardId.of(TOPIC, 0);
        int rounds = 36; // past DeleteRetention.KEPT_FRAGMENTS_MAX: one fragment each
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, rounds + 2, 0));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            for (int i = 0; i < rounds; i++) {
                write(table, 0, List.of(delete(0, rounds + 2 + i, "key-" + i, 1)));
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            }
            assertThat(keptFragments(location)).isEqualTo(rounds);
            table.maintenance().dropDeletes(Duration.between(T0, Instant.now()).plusDays(1)); // drops none
            assertThat(keptFragments(location)).isEqualTo(1);
            assertThat(deletesBeside(location)).hasSize(rounds);
            assertThat(baseRows(location)).containsOnlyKeys("key-" + rounds, "key-" + (rounds + 1));
            assertThat(table.get("key-0")).isEmpty();
            assertThat(table.countRows()).isEqualTo(2);
        }
    }

    private static int keptFragments(TableLocation location) throws Exception {
        try (RootAllocator allocator = new RootAllocator();
                Dataset kept = Dataset.open()
                        .allocator(allocator)
                        .uri(location.resolve("_deletes"))
                        .build()) {
            return kept.getFragments().size();
        }
    }

    @Test
    void garbageCollectionOfTheBaseKeepsTheDeletesBesideIt() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-gc"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, 3, 0));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 3, "key-0", 1)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            table.maintenance().compact(1_000);
            table.maintenance().collectGarbage(Duration.ZERO);
            assertThat(deletesBeside(location)).containsExactly("key-0=0@3");
            assertThat(baseRows(location)).containsOnlyKeys("key-1", "key-2");
            assertThat(table.get("key-0")).isEmpty();
        }
    }

    @Test
    void orderHoldsPerKeyPutDeletePutLeavesTheLastPutAndDeleteThenPutLeavesThePut() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-order"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, List.of(put(0, 0, "a", 0), put(0, 1, "b", 0)));
            write(table, 0, List.of(delete(0, 2, "a", 1), delete(0, 3, "b", 1)));
            write(table, 0, List.of(put(0, 4, "a", 2))); // put -> delete -> put
            // within one generation: delete then put
            write(table, 0, List.of(delete(0, 5, "c", 3), put(0, 6, "c", 3)));
            assertThat(table.get("a").orElseThrow().sourceOffset()).isEqualTo(4);
            assertThat(table.get("b")).isEmpty();
            assertThat(table.get("c").orElseThrow().sourceOffset()).isEqualTo(6);

            table.merges().pass(MergeRequest.of(shard).limits(1, 0)); // a, b in the base
            table.merges().pass(MergeRequest.of(shard).limits(1, 0)); // both deleted
            assertThat(live(location)).isEmpty();
            assertThat(table.get("a").orElseThrow().sourceOffset()).isEqualTo(4); // still pending
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(live(location)).containsExactlyInAnyOrder("a", "c");
            assertThat(baseRows(location)).containsOnlyKeys("a", "c").containsEntry("a", "0@4");
            assertThat(baseRows(location)).containsEntry("c", "0@6");
            assertThat(deletesBeside(location)).contains("b=0@3");
        }
    }

    @Test
    void aDeleteNeverRemovesANewerValueOfAnotherPartition() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-cross"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 1, List.of(put(1, 0, "x", 10), put(1, 1, "y", 10))); // ingested at T0+10
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 1)).limits(8, 0));
            // deletes from partition 0, one ingested before (x), one after (y) the base values
            write(table, 0, List.of(delete(0, 0, "x", 5), delete(0, 1, "y", 20)));
            assertThat(table.get("x")).isPresent();
            assertThat(table.get("y")).isEmpty();
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            assertThat(live(location)).containsExactly("x");
            assertThat(baseRows(location)).containsOnlyKeys("x").containsEntry("x", "1@0");
            assertThat(deletesBeside(location)).contains("y=0@1");
        }
    }

    @Test
    void aSnapshotTakenBeforeADeleteStillHoldsTheRow() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-snapshot"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, 5, 0));
            table.snapshots().create("before", TableSnapshots.Cut.everythingSealed(TOPIC));
            write(table, 0, List.of(delete(0, 5, "key-2", 1)));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            table.maintenance().dropDeletes(Duration.ZERO);
            assertThat(baseRows(location)).doesNotContainKey("key-2");
            assertThat(baseRows(location, "before")).containsKey("key-2");
            assertThat(table.get("key-2", "before")).isPresent();
            TableSnapshots.Snapshot after =
                    table.snapshots().create("after", TableSnapshots.Cut.everythingSealed(TOPIC));
            assertThat(after.rows()).isEqualTo(4);
            assertThat(table.get("key-2", "after")).isEmpty();
        }
    }

    @Test
    void anExportedSnapshotHoldsNoDeleteRow() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-export"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, 5, 0));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 5, "key-2", 1), delete(0, 6, "never-was", 1)));
            TableSnapshots.Snapshot snapshot =
                    table.snapshots().create("with-deletes", TableSnapshots.Cut.everythingSealed(TOPIC));
            assertThat(snapshot.rows()).isEqualTo(4);
            // a plain reader of the tag sees live rows only
            assertThat(baseRows(location, "with-deletes")).hasSize(4).doesNotContainKeys("key-2", "never-was");

            TableLocation exported = TableLocation.local(freshDir("deletes-exported"));
            assertThat(table.snapshots().export("with-deletes", exported)).isEqualTo(4);
            assertThat(baseRows(exported)).hasSize(4).doesNotContainKeys("key-2", "never-was");
        }
    }

    @Test
    void aCrashBetweenTheDeleteAndTheMarksDeletesOnceAndResurrectsNothing() throws Exception {
        TableLocation location = TableLocation.local(freshDir("deletes-crash"));
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            write(table, 0, puts(0, 0, 5, 0));
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            write(table, 0, List.of(delete(0, 5, "key-1", 1)));
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.APPENDED) {
                    throw new IllegalStateException("the committer stops after the delete, before the marks");
                }
            });
            try {
                table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            } catch (RuntimeException expected) {
                // the delete committed, the marks did not
            }
            TableSeams.failMergeCommitsAt(table, null);
            assertThat(live(location)).doesNotContain("key-1");
            assertThat(table.generations().pending(shard)).hasSize(1);
            // a cut below the delete's generation is not taken from a version the delete is in
            table.snapshots().create("cut", new TableSnapshots.Cut(TOPIC, java.util.Map.of(0, 5L)));
            assertThat(baseRows(location, "cut")).containsKey("key-1").hasSize(5);
            assertThat(table.get("key-1", "cut")).isPresent();
            assertThat(table.get("key-1")).isEmpty();
            table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(live(location)).hasSize(4).doesNotContain("key-1");
            assertThat(table.generations().pending(shard)).isEmpty();
        }
    }

    private static List<String> live(TableLocation location) throws Exception {
        return TableFixtures.liveBaseKeys(location, null);
    }
}
