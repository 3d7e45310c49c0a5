package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.liveBaseKeys;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeSteps;
import dev.rolloutingest.table.merge.RoundResult;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.reads.RowStream;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.reads.TailCursor;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/**
 * Point reads and lists, scans and tails, and the merge decide which row of a key wins by one rule ({@code
 * NewestWins}): fed the same puts and deletes (three partitions, several generations each, some merged into the
 * base), each path keeps the same survivors, and a merge leaves them in the base as lance-core alone reads it.
 */
class SameSurvivorsOnEveryPathTest {
    private final RolloutGenerator generator = new RolloutGenerator("win", 8, 7);

    private RolloutRow put(int partition, long offset, String id, long seconds) {
        return TableFixtures.put(generator, partition, offset, id, seconds);
    }

    private static RolloutRow delete(int partition, long offset, String id, long seconds) {
        return TableFixtures.delete(partition, offset, id, seconds);
    }

    /** Every key's surviving value as "partition@offset". */
    private static final Map<String, String> SURVIVORS = new TreeMap<>(Map.ofEntries(
            Map.entry("a", "0@10"),
            Map.entry("b", "1@0"),
            Map.entry("c", "0@12"),
            Map.entry("e", "1@10"),
            Map.entry("g", "1@11"),
            Map.entry("i", "2@6"),
            Map.entry("j", "2@0"),
            Map.entry("k", "2@8"),
            Map.entry("l", "2@9"),
            Map.entry("m", "0@4"),
            Map.entry("s", "0@18"),
            Map.entry("x", "2@2")));

    /** The keys whose newest row is a delete, as "partition@offset" of that delete. */
    private static final Map<String, String> DELETED =
            new TreeMap<>(Map.of("d", "0@13", "f", "1@2", "h", "2@5", "n", "1@4"));

    private static final List<String> KEYS =
            List.of("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "s", "x");

    /**
     * The rows, ingest times in seconds after T0. Merged into the base first: partition 0's generation of offsets
     * 0-4, 1's of 0-4, 2's of 0-2. Pending: partition 0's of 10-17 and 18-20, 1's of 10-12, 2's of 5-7 and 8-9.
     *
     * <pre>
     * a  base 0@0 t1          pending 0@10 t10                         one partition: the higher offset
     * b  base 1@0 t50         pending 0@11 t20                         a base row ingested later wins
     * c  base 1@1 t5          pending 0@12 t20                         a pending row ingested later wins
     * d  base 0@1 t1          pending delete 0@13 t21                  deleted
     * e  base 0@2 t1, delete 0@3 t2 (one generation)  pending 1@10 t30 a value after a delete in the base
     * f  base delete 1@2 t60  pending 0@14 t25                         a base delete ingested later wins
     * g  pending 0@15 t30, 1@11 t30                                    the same time: the higher partition
     * h  pending 0@19 t40, delete 2@5 t45                              two shards' pending rows
     * i  base 1@3 t1          pending delete 0@20 t40, 2@6 t41         a value after a delete of another shard
     * j  base 2@0 t40         pending 1@12 t40                         the same time, the base's partition higher
     * k  base 2@1 t3          pending delete 2@7 t4, 2@8 t4            the same time, one partition: the offset
     * l                       pending 2@9 t50                          new
     * m  base 0@4 t2                                                   untouched
     * n  base delete 1@4 t2                                            a delete of a key that never was
     * s                       pending 0@16 t35, 0@18 t30               the clock went back: the offset decides
     * x  base 2@2 t70         pending delete 0@17 t26                  a delete ingested before the base value
     * </pre>
     */
    private RolloutTable tableWithBaseAndPending(String name) {
        RolloutTable table = RolloutTable.createOrOpen(
                TableLocation.local(freshDir(name)), TableSettings.DEFAULTS, new SimpleMeterRegistry());
        TableFixtures.write(
                table,
                0,
                List.of(
                        put(0, 0, "a", 1),
                        put(0, 1, "d", 1),
                        put(0, 2, "e", 1),
                        delete(0, 3, "e", 2),
                        put(0, 4, "m", 2)));
        TableFixtures.write(
                table,
                1,
                List.of(
                        put(1, 0, "b", 50),
                        put(1, 1, "c", 5),
                        delete(1, 2, "f", 60),
                        put(1, 3, "i", 1),
                        delete(1, 4, "n", 2)));
        TableFixtures.write(table, 2, List.of(put(2, 0, "j", 40), put(2, 1, "k", 3), put(2, 2, "x", 70)));
        for (int partition = 0; partition < 3; partition++) {
            table.merges().pass(MergeRequest.of(shard(partition)).limits(8, 0));
        }
        TableFixtures.write(
                table,
                0,
                List.of(
                        put(0, 10, "a", 10),
                        put(0, 11, "b", 20),
                        put(0, 12, "c", 20),
                        delete(0, 13, "d", 21),
                        put(0, 14, "f", 25),
                        put(0, 15, "g", 30),
                        put(0, 16, "s", 35),
                        delete(0, 17, "x", 26)));
        TableFixtures.write(table, 0, List.of(put(0, 18, "s", 30), put(0, 19, "h", 40), delete(0, 20, "i", 40)));
        TableFixtures.write(table, 1, List.of(put(1, 10, "e", 30), put(1, 11, "g", 30), put(1, 12, "j", 40)));
        TableFixtures.write(table, 2, List.of(delete(2, 5, "h", 45), put(2, 6, "i", 41), delete(2, 7, "k", 4)));
        TableFixtures.write(table, 2, List.of(put(2, 8, "k", 4), put(2, 9, "l", 50)));
        for (int partition = 0; partition < 3; partition++) {
            assertThat(table.generations().pending(shard(partition))).isNotEmpty();
        }
        return table;
    }

    private static String shard(int partition) {
        return ShardId.of(TOPIC, partition);
    }

    private static String at(RolloutRow row) {
        return row.sourcePartition() + "@" + row.sourceOffset();
    }

    @Test
    void pointReadsScansTailsAndMergesKeepTheSameSurvivorsOfPutsAndDeletes() throws Exception {
        try (RolloutTable table = tableWithBaseAndPending("survivors")) {
            assertReadsSeeTheSurvivors(table);

            // one group commit of every shard's pending generations into the base
            RoundResult round = MergeSteps.round(table, List.of(shard(0), shard(1), shard(2)), 8, 0);
            assertThat(round.failed()).isEmpty();
            assertMergedBaseHoldsTheSurvivors(table);
            assertReadsSeeTheSurvivors(table);
        }
        // the same rows merged a generation at a time, the shards in the other order: the same base
        try (RolloutTable table = tableWithBaseAndPending("survivors-one-by-one")) {
            for (int partition = 2; partition >= 0; partition--) {
                while (!table.generations().pending(shard(partition)).isEmpty()) {
                    table.merges().pass(MergeRequest.of(shard(partition)).limits(1, 0));
                }
            }
            assertMergedBaseHoldsTheSurvivors(table);
            assertReadsSeeTheSurvivors(table);
        }
    }

    private static void assertMergedBaseHoldsTheSurvivors(RolloutTable table) throws Exception {
        for (int partition = 0; partition < 3; partition++) {
            assertThat(table.generations().pending(shard(partition))).isEmpty();
        }
        Map<String, String> base = baseRows(table.location()); // fails on a key held twice
        Set<String> live = new TreeSet<>(liveBaseKeys(table.location(), null));
        Map<String, String> values = new TreeMap<>();
        Map<String, String> deletes = new TreeMap<>();
        base.forEach((key, at) -> (live.contains(key) ? values : deletes).put(key, at));
        assertThat(values).as("the base's values, read by lance-core").isEqualTo(SURVIVORS);
        assertThat(deletes).as("delete rows in the base, read by lance-core").isEmpty();
        List<String> beside = TableFixtures.deletesBeside(table.location());
        DELETED.forEach((key, at) -> assertThat(beside)
                .as("the deletes kept beside the base, read by lance-core")
                .contains(key + "=" + at));
    }

    private static void assertReadsSeeTheSurvivors(RolloutTable table) throws Exception {
        Map<String, String> got = new TreeMap<>();
        for (String key : KEYS) {
            table.get(key).ifPresent(row -> got.put(key, at(row)));
        }
        assertThat(got).as("point gets").isEqualTo(SURVIVORS);

        Map<String, String> listed = new TreeMap<>();
        for (RolloutRow row : table.list(ListQuery.all(100))) {
            assertThat(listed.put(row.recordId(), at(row)))
                    .as("%s listed twice", row.recordId())
                    .isNull();
        }
        assertThat(listed).as("list").isEqualTo(SURVIVORS);
        assertThat(table.countRows()).as("count").isEqualTo(SURVIVORS.size());

        Handed scan = new Handed();
        scan.drain(table.scan(ScanQuery.all(), TOPIC));
        assertThat(scan.values).as("a scan of every row").isEqualTo(SURVIVORS);
        assertThat(scan.deletes).isEmpty();

        // a filter every value matches takes the filtered scan's passes
        Handed filtered = new Handed();
        filtered.drain(table.scan(ScanQuery.all().withPolicyVersions(0L, null), TOPIC));
        assertThat(filtered.values).as("a filtered scan").isEqualTo(SURVIVORS);

        Handed tail = new Handed();
        tail.drain(table.tail(table.startCursor(TOPIC), TOPIC, ScanQuery.all(), 0));
        assertThat(tail.values).as("a tail from the start").isEqualTo(SURVIVORS);
        assertThat(tail.deletes).as("a tail's deletes").isEqualTo(DELETED);

        // two offsets of each partition an answer: ranges past the merged rows look the base up by key instead
        Handed steps = new Handed();
        TailCursor cursor = table.startCursor(TOPIC);
        boolean more = true;
        while (more) {
            RowStream answer = table.tail(cursor, TOPIC, ScanQuery.all(), 2);
            steps.drain(answer);
            cursor = answer.cursor();
            more = answer.more();
        }
        assertThat(steps.values).as("tails of two offsets a partition").isEqualTo(SURVIVORS);
        assertThat(steps.deletes).as("their deletes").isEqualTo(DELETED);
    }

    /** What scans or tails handed over: values and deletes as "partition@offset", every key once. */
    private static final class Handed {
        final Map<String, String> values = new TreeMap<>();
        final Map<String, String> deletes = new TreeMap<>();
        private final Map<String, Integer> times = new HashMap<>();

        void drain(RowStream stream) throws Exception {
            try (stream) {
                VectorSchemaRoot root = stream.getVectorSchemaRoot();
                while (stream.loadNextBatch()) {
                    VarCharVector ids = (VarCharVector) root.getVector(RolloutSchema.RECORD_ID);
                    IntVector partitions = (IntVector) root.getVector(RolloutSchema.SOURCE_PARTITION);
                    BigIntVector offsets = (BigIntVector) root.getVector(RolloutSchema.SOURCE_OFFSET);
                    BitVector deleted = (BitVector) root.getVector(RowStream.DELETED);
                    for (int i = 0; i < root.getRowCount(); i++) {
                        String id = ids.getObject(i).toString();
                        assertThat(times.merge(id, 1, Integer::sum))
                                .as("%s handed over twice", id)
                                .isEqualTo(1);
                        String at = partitions.get(i) + "@" + offsets.get(i);
                        (deleted != null && deleted.get(i) == 1 ? deletes : values).put(id, at);
                    }
                }
            }
        }
    }
}
