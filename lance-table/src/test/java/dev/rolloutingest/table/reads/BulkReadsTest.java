package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.delete;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static dev.rolloutingest.table.TableFixtures.rows;
import static dev.rolloutingest.table.TableFixtures.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.junit.jupiter.api.Test;

/** Scans and tails on a real local table: newest value per key over base + pending, cursors, their refusals. */
class BulkReadsTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    /** What a read handed over: per key, its offset and whether it was a delete; every key once. */
    record Read(
            Map<String, Long> offsets, Map<String, Boolean> deleted, List<Integer> batchSizes, List<String> columns) {}

    private static Read drain(RowStream stream) throws Exception {
        Map<String, Long> offsets = new HashMap<>();
        Map<String, Boolean> deleted = new HashMap<>();
        List<Integer> sizes = new ArrayList<>();
        List<String> columns;
        try (stream) {
            VectorSchemaRoot root = stream.getVectorSchemaRoot();
            columns = root.getSchema().getFields().stream().map(Field::getName).toList();
            while (stream.loadNextBatch()) {
                sizes.add(root.getRowCount());
                VarCharVector ids = (VarCharVector) root.getVector(RolloutSchema.RECORD_ID);
                BigIntVector versions = (BigIntVector) root.getVector(RolloutSchema.POLICY_VERSION);
                BitVector deletes = (BitVector) root.getVector(RowStream.DELETED);
                for (int i = 0; i < root.getRowCount(); i++) {
                    String id = ids.getObject(i).toString();
                    boolean delete = deletes != null && deletes.get(i) == 1;
                    long version = versions == null || versions.isNull(i) ? -1 : versions.get(i);
                    assertThat(offsets.put(id, version))
                            .as("key %s handed over twice", id)
                            .isNull();
                    deleted.put(id, delete);
                }
            }
        }
        return new Read(offsets, deleted, sizes, columns);
    }

    private static String shard(int partition) {
        return ShardId.of(TOPIC, partition);
    }

    /** Partition 0: offsets 0..99 over keys exp-0..49 merged (each key's newest at 50..99), then pending updates. */
    private RolloutTable tableWithBaseAndPending(String name) {
        RolloutTable table = localTable(name, meters);
        TableFixtures.write(table, 0, 0, 99, 50);
        table.merges().pass(MergeRequest.of(shard(0)).limits(100, Long.MAX_VALUE));
        // pending: exp-0..9 updated at 100..109, then exp-10 deleted at 110
        write(table, 0, rows(0, 100, 109, 50));
        write(table, 0, List.of(delete(0, 110, "exp-10", 0)));
        return table;
    }

    @Test
    void aScanHandsOverEveryKeysNewestValueOnceOverBaseAndPendingDeletesHidden() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("scan-newest")) {
            Read read = drain(table.scan(ScanQuery.all(), TOPIC));
            assertThat(read.offsets()).hasSize(49).doesNotContainKey("exp-10");
            for (int k = 0; k < 50; k++) {
                if (k != 10) {
                    long newest = k < 10 ? 100 + k : 50 + k; // policy_version = the offset of the row
                    assertThat(read.offsets()).containsEntry("exp-" + k, newest);
                }
            }
            assertThat(read.offsets()).hasSize((int) table.countRows());
            assertThat(read.columns()).isEqualTo(RolloutSchema.allColumns());
        }
    }

    @Test
    void aScanProjectsFiltersLimitsAndBatches() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("scan-shape")) {
            ScanQuery query = ScanQuery.all()
                    .withColumns(List.of(RolloutSchema.POLICY_VERSION, RolloutSchema.RECORD_ID))
                    .withPolicyVersions(95L, null)
                    .withBatchRows(4);
            Read read = drain(table.scan(query, TOPIC));
            // newest values with policy_version >= 95: exp-45..49 (95..99) and exp-0..9 (100..109)
            assertThat(read.offsets().keySet()).hasSize(15).contains("exp-45", "exp-0", "exp-9");
            assertThat(read.columns()).containsExactly(RolloutSchema.POLICY_VERSION, RolloutSchema.RECORD_ID);
            assertThat(read.batchSizes()).allMatch(n -> n <= 4);
            // a filter applies to the newest value: exp-0..9's base rows (50..59) and exp-10's (60) match <= 61, but
            // their newest rows (pending updates, a delete) do not
            Read old = drain(table.scan(ScanQuery.all().withPolicyVersions(null, 61L), TOPIC));
            assertThat(old.offsets()).containsOnlyKeys("exp-11");
            assertThat(drain(table.scan(ScanQuery.all().withLimit(7).withBatchRows(3), TOPIC))
                            .offsets())
                    .hasSize(7);
            assertThat(drain(table.scan(ScanQuery.all().withExperiment("other"), TOPIC))
                            .offsets())
                    .isEmpty();
            // a caller may load a batch before it asks for the root
            try (RowStream first = table.scan(ScanQuery.all().withLimit(3), TOPIC)) {
                assertThat(first.loadNextBatch()).isTrue();
                assertThat(first.getVectorSchemaRoot().getRowCount()).isEqualTo(3);
            }
            assertThat(drain(table.scan(
                                    ScanQuery.all()
                                            .withIncludeInTraining(true)
                                            .withRewards(0.0, 1.0)
                                            .withCreated(Instant.EPOCH, Instant.parse("2100-01-01T00:00:00Z")),
                                    TOPIC))
                            .offsets())
                    .hasSize(49);
        }
    }

    @Test
    void badScansAreRefusedWithTheReason() {
        try (RolloutTable table = tableWithBaseAndPending("scan-bad")) {
            assertThatThrownBy(() -> table.scan(ScanQuery.all().withColumns(List.of("nope")), TOPIC))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("unknown column 'nope'");
            assertThatThrownBy(() -> table.scan(ScanQuery.all().withLimit(Long.MAX_VALUE), TOPIC))
                    .hasMessageContaining("limit must be at most");
            assertThatThrownBy(() -> table.scan(ScanQuery.all().withBatchRows(1_000_000), TOPIC))
                    .hasMessageContaining("batch rows must be at most");
            assertThatThrownBy(() -> ScanQuery.all().withPolicyVersions(5L, 4L))
                    .hasMessageContaining("policy_version range is empty");
            // a refused read gives its slot back: as many reads as the setting allows still open
            for (int i = 0; i < TableSettings.DEFAULTS.scanMaxConcurrent(); i++) {
                table.scan(ScanQuery.all(), TOPIC);
            }
            assertThatThrownBy(() -> table.scan(ScanQuery.all(), TOPIC)).isInstanceOf(RolloutTableException.Busy.class);
        }
    }

    @Test
    void aTailHandsOverWhatChangedAfterItsCursorOnceWhateverMergesAndCompactionsDid() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("tail")) {
            RowStream first = table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0);
            Read all = drain(first);
            // from the start: every key's newest row, the delete as a delete event
            assertThat(all.offsets()).hasSize(50);
            assertThat(all.deleted()).containsEntry("exp-10", true).containsEntry("exp-0", false);
            TailCursor cursor = first.cursor();
            assertThat(cursor.offsets()).containsEntry(0, 110L);
            assertThat(all.columns()).endsWith(RowStream.DELETED);

            // nothing new: nothing handed over, the same cursor
            RowStream idle = table.tail(cursor, TOPIC, ScanQuery.all(), 0);
            assertThat(drain(idle).offsets()).isEmpty();
            assertThat(idle.cursor()).isEqualTo(cursor);

            // new rows: exp-20..24 updated, exp-30 deleted, exp-0 updated twice in one range (handed over once)
            write(
                    table,
                    0,
                    rows(0, 111, 115, 50).stream()
                            .map(r -> TableFixtures.put(
                                    new RolloutGenerator("exp", 8, 42),
                                    0,
                                    r.sourceOffset(),
                                    "exp-" + (r.sourceOffset() - 91),
                                    0))
                            .toList());
            write(table, 0, List.of(delete(0, 116, "exp-30", 0)));
            write(
                    table,
                    0,
                    List.of(
                            TableFixtures.put(new RolloutGenerator("exp", 8, 42), 0, 117, "exp-0", 0),
                            TableFixtures.put(new RolloutGenerator("exp", 8, 42), 0, 118, "exp-0", 0)));
            Map<String, Long> expected = Map.of(
                    "exp-20", 111L, "exp-21", 112L, "exp-22", 113L, "exp-23", 114L, "exp-24", 115L, "exp-30", -1L,
                    "exp-0", 118L);
            Read pendingOnly = drain(table.tail(cursor, TOPIC, ScanQuery.all(), 0));
            assertThat(pendingOnly.offsets()).hasSize(7).containsAllEntriesOf(expected);
            assertThat(pendingOnly.deleted()).containsEntry("exp-30", true).containsEntry("exp-20", false);

            // the same cursor after everything merged and the base compacted: the same answer
            table.merges().pass(MergeRequest.of(shard(0)).limits(100, Long.MAX_VALUE));
            assertThat(table.generations().pending(shard(0))).isEmpty();
            table.maintenance().compact(1_000_000);
            RowStream merged = table.tail(cursor, TOPIC, ScanQuery.all(), 0);
            Read afterMerge = drain(merged);
            assertThat(afterMerge.offsets()).isEqualTo(pendingOnly.offsets());
            assertThat(afterMerge.deleted()).isEqualTo(pendingOnly.deleted());
            assertThat(merged.cursor().offsets()).containsEntry(0, 118L);

            // a filtered tail: values matching the filter, deletes whatever the filter
            Read filtered = drain(table.tail(cursor, TOPIC, ScanQuery.all().withPolicyVersions(114L, null), 0));
            assertThat(filtered.offsets()).containsOnlyKeys("exp-23", "exp-24", "exp-0", "exp-30");
        }
    }

    @Test
    void aTailMovesAtMostItsSpanOfOffsetsAndSaysWhenThereIsMore() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("tail-span")) {
            TailCursor cursor = table.startCursor(TOPIC);
            Map<String, Long> seen = new HashMap<>();
            int answers = 0;
            boolean more = true;
            while (more) {
                RowStream stream = table.tail(cursor, TOPIC, ScanQuery.all(), 30);
                Read read = drain(stream);
                read.offsets().forEach((key, offset) -> assertThat(seen.put(key, offset))
                        .as("key %s handed over again", key)
                        .isNull());
                assertThat(stream.cursor().offset(0)).isLessThanOrEqualTo(cursor.offset(0) + 30);
                cursor = stream.cursor();
                more = stream.more();
                answers++;
            }
            assertThat(answers).isEqualTo(4); // 111 offsets, 30 at a time
            assertThat(seen).hasSize(50);
        }
    }

    @Test
    void aScanOfASnapshotHandsOverItsCursorAndATailFromItEverythingAfter() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("tail-snapshot")) {
            table.snapshots().create("s1", TableSnapshots.Cut.everythingSealed(TOPIC));
            RowStream snap = table.scan(ScanQuery.all(), TOPIC, "s1");
            assertThat(drain(snap).offsets()).hasSize(49);
            assertThat(snap.cursor().offsets()).containsEntry(0, 110L);
            write(table, 0, rows(0, 111, 112, 50));
            Read after = drain(table.tail(snap.cursor(), TOPIC, ScanQuery.all(), 0));
            assertThat(after.offsets()).containsOnlyKeys("exp-11", "exp-12");
        }
    }

    @Test
    void aCursorTheTableCannotAnswerExactlyIsRefused() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("tail-stale");
                RolloutTable other = localTable("tail-other", meters)) {
            TailCursor before = table.startCursor(TOPIC);
            // another table's cursor, another topic's: bad requests
            assertThatThrownBy(() -> table.tail(other.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("another table");
            assertThatThrownBy(() -> table.tail(before, "other-topic", ScanQuery.all(), 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("topic");
            assertThatThrownBy(() -> TailCursor.decode("not-a-cursor")).isInstanceOf(IllegalArgumentException.class);
            // ahead of the table (recreated or restored)
            TailCursor ahead = new TailCursor(before.table(), TOPIC, Map.of(0, 5_000L));
            assertThatThrownBy(() -> table.tail(ahead, TOPIC, ScanQuery.all(), 0))
                    .isInstanceOf(RolloutTableException.StaleCursor.class)
                    .hasMessageContaining("recreated or restored");
            // the delete at offset 110 is dropped: a cursor below it could miss it
            RowStream upTo105 = table.tail(before, TOPIC, ScanQuery.all(), 106);
            drain(upTo105);
            RowStream caughtUp = table.tail(before, TOPIC, ScanQuery.all(), 0);
            drain(caughtUp);
            table.merges().pass(MergeRequest.of(shard(0)).limits(100, Long.MAX_VALUE));
            assertThat(table.maintenance().dropDeletes(Duration.ZERO).dropped()).isEqualTo(1);
            assertThatThrownBy(() -> table.tail(upTo105.cursor(), TOPIC, ScanQuery.all(), 0))
                    .isInstanceOf(RolloutTableException.StaleCursor.class)
                    .hasMessageContaining("deletes up to offset 110 of partition 0 were dropped");
            // a cursor past the drop goes on
            assertThat(drain(table.tail(caughtUp.cursor(), TOPIC, ScanQuery.all(), 0))
                            .offsets())
                    .isEmpty();
            // the encoded cursor comes back as it was
            assertThat(TailCursor.decode(caughtUp.cursor().encode())).isEqualTo(caughtUp.cursor());
        }
    }

    @Test
    void aTailRefusesATableThatAlsoHoldsAnotherTopicsRowsAndAScanStillAnswers() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("tail-two-topics")) {
            TailCursor start = table.startCursor(TOPIC);
            // many topics routed to one table: partition 0 of another topic, the same partition number
            try (dev.rolloutingest.table.generations.GenerationBatch batch =
                    table.generations().newBatch()) {
                rows(0, 0, 4, 50).forEach(batch::append);
                table.generations().write("other-topic", 0, 0, 4, batch, 100, List.of());
            }
            assertThatThrownBy(() -> table.tail(start, TOPIC, ScanQuery.all(), 0))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("a topic other than 'rollouts'");
            assertThat(drain(table.scan(ScanQuery.all(), TOPIC)).offsets()).isNotEmpty();
        }
    }

    @Test
    void aKeyThatMovedPartitionsIsHandedOverAsItsNewestRowOnly() throws Exception {
        try (RolloutTable table = localTable("scan-moved", meters)) {
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
            // partition 1's row of key k is newer (ingested later) and merged; partition 0's older row is pending
            write(table, 1, List.of(TableFixtures.put(generator, 1, 5, "k", 100)));
            table.merges().pass(MergeRequest.of(shard(1)).limits(100, Long.MAX_VALUE));
            write(
                    table,
                    0,
                    List.of(TableFixtures.put(generator, 0, 7, "k", 50), TableFixtures.put(generator, 0, 8, "j", 50)));
            Read scan = drain(table.scan(ScanQuery.all(), TOPIC));
            assertThat(scan.offsets())
                    .containsEntry("k", 5L)
                    .containsEntry("j", 8L)
                    .hasSize(2);
            // filtered so the bulk pass does not return k: the pass over pending keys' base rows still finds it newer
            RowStream filtered = table.scan(ScanQuery.all().withPolicyVersions(6L, null), TOPIC);
            assertThat(drain(filtered).offsets()).containsOnlyKeys("j");
            assertThat(filtered.baseLookups()).isZero();
            // a tail past partition 1's merged rows scans no base: an indexed lookup finds k's base row newer
            RowStream past = table.tail(
                    new TailCursor(table.startCursor(TOPIC).table(), TOPIC, Map.of(1, 5L)), TOPIC, ScanQuery.all(), 0);
            assertThat(drain(past).offsets()).containsOnlyKeys("j");
            assertThat(past.baseLookups()).isEqualTo(1);
            Read tail = drain(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0));
            assertThat(tail.offsets()).containsEntry("k", 5L).hasSize(2);
        }
    }

    @Test
    void aScanOfEveryRowShowsWhicheverRowOfAMovedKeyIsNewerByItsIngestTime() throws Exception {
        try (RolloutTable table = localTable("scan-moved-many", meters)) {
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
            // partition 1, merged: a and c ingested late, b early; partition 0, pending: a, b, c at 50 s, d new
            write(
                    table,
                    1,
                    List.of(
                            TableFixtures.put(generator, 1, 5, "a", 100),
                            TableFixtures.put(generator, 1, 6, "b", 10),
                            TableFixtures.put(generator, 1, 7, "c", 100),
                            TableFixtures.put(generator, 1, 8, "e", 10)));
            table.merges().pass(MergeRequest.of(shard(1)).limits(100, Long.MAX_VALUE));
            write(
                    table,
                    0,
                    List.of(
                            TableFixtures.put(generator, 0, 20, "a", 50),
                            TableFixtures.put(generator, 0, 21, "b", 50),
                            TableFixtures.put(generator, 0, 22, "c", 50),
                            TableFixtures.put(generator, 0, 23, "d", 50)));
            // one row a batch: the base rows read again after the pass come in batches of the asked size too
            Read scan = drain(table.scan(ScanQuery.all().withBatchRows(1), TOPIC));
            assertThat(scan.offsets())
                    .containsEntry("a", 5L)
                    .containsEntry("b", 21L)
                    .containsEntry("c", 7L)
                    .containsEntry("d", 23L)
                    .containsEntry("e", 8L)
                    .hasSize(5);
            assertThat(scan.batchSizes()).allMatch(rows -> rows == 1);
        }
    }

    @Test
    void aScanOfEveryRowHidesAPendingValueThatANewerDeleteInTheBaseReplaces() throws Exception {
        try (RolloutTable table = localTable("scan-newer-base-delete", meters)) {
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
            // partition 1 deleted k at 60 s, merged; partition 0's value of k, ingested before (25 s), still pending
            write(table, 1, List.of(delete(1, 2, "k", 60)));
            table.merges().pass(MergeRequest.of(shard(1)).limits(100, Long.MAX_VALUE));
            write(
                    table,
                    0,
                    List.of(
                            TableFixtures.put(generator, 0, 14, "k", 25),
                            TableFixtures.put(generator, 0, 15, "j", 25)));
            assertThat(table.get("k")).isEmpty();
            assertThat(drain(table.scan(ScanQuery.all(), TOPIC)).offsets()).containsOnlyKeys("j");
            assertThat(drain(table.scan(ScanQuery.all().withPolicyVersions(0L, null), TOPIC))
                            .offsets())
                    .containsOnlyKeys("j");
        }
    }

    @Test
    void aScanClosedEarlyByItsLimitOrdersNoHeldBackRow() throws Exception {
        try (RolloutTable table = localTable("scan-moved-limit", meters)) {
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
            // k first in the base (partition 1, merged), its newer row pending in partition 0
            write(
                    table,
                    1,
                    List.of(
                            TableFixtures.put(generator, 1, 5, "k", 10),
                            TableFixtures.put(generator, 1, 6, "a", 10),
                            TableFixtures.put(generator, 1, 7, "b", 10)));
            table.merges().pass(MergeRequest.of(shard(1)).limits(100, Long.MAX_VALUE));
            write(table, 0, List.of(TableFixtures.put(generator, 0, 20, "k", 50)));
            RowStream every = table.scan(ScanQuery.all().withBatchRows(2), TOPIC);
            assertThat(drain(every).offsets()).containsEntry("k", 20L).hasSize(3);
            assertThat(every.baseTakes()).as("k's base row ordered by a take").isEqualTo(1);
            // the first base batch (k held back, a shown) reaches the limit: closing orders nothing
            RowStream limited = table.scan(ScanQuery.all().withBatchRows(2).withLimit(1), TOPIC);
            assertThat(drain(limited).offsets()).hasSize(1);
            assertThat(limited.baseTakes()).as("no take after the answer ended").isZero();
        }
    }
}
