package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.appendWithLance;
import static dev.rolloutingest.table.TableFixtures.baseRows;
import static dev.rolloutingest.table.TableFixtures.delete;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.latestVersion;
import static dev.rolloutingest.table.TableFixtures.put;
import static dev.rolloutingest.table.TableFixtures.restore;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/**
 * The committer's book of the newest keys' addresses finds the rows an update replaces without the join, and a stale
 * address (rows compacted away, a row deleted, an id used again after a restore) never stands for a key's row: every
 * outcome is the one the exact join gives, read from the base by lance-core alone.
 */
class KeyAddressesTest {
    private static final RolloutGenerator GENERATOR = new RolloutGenerator("book", 8, 3);

    /** Puts of key-(start..start+n) at offsets first.. of a partition, ingested {@code seconds} after T0. */
    private static List<RolloutRow> puts(int partition, long first, int start, int n, long seconds) {
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            rows.add(put(GENERATOR, partition, first + i, "key-" + (start + i), seconds));
        }
        return rows;
    }

    private static void merge(RolloutTable table, int partition, List<RolloutRow> rows) {
        TableFixtures.write(table, partition, rows);
        table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, partition)).limits(8, 0));
    }

    private static double lookups(SimpleMeterRegistry meters, String result) {
        return meters.get("rollout.merge.key.addresses.lookups")
                .tag("result", result)
                .counter()
                .count();
    }

    private static double trusted(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.key.addresses.rows.trusted").counter().count();
    }

    private static double taken(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.key.addresses.rows.taken").counter().count();
    }

    private static double joinCommits(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.join.commits").counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }

    @Test
    void anUpdateOfARecentlyMergedKeyIsFoundAtItsAddressWithoutTheJoin() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-found"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99
            merge(table, 0, puts(0, 100, 0, 50, 1)); // key-0..49 again: updates
            merge(table, 0, puts(0, 150, 0, 10, 2)); // key-0..9 a third time: the book read the updates too
            // found in fragments the book read on the way, in this version: nothing to take
            assertThat(taken(meters)).isZero();
            // key-60..69: in a fragment read two commits ago, untouched since, all its rows older: replaced unread
            merge(table, 0, puts(0, 160, 60, 10, 3));

            assertThat(lookups(meters, "found")).isEqualTo(70);
            assertThat(trusted(meters)).isEqualTo(10);
            assertThat(taken(meters)).isZero();
            assertThat(lookups(meters, "stale") + lookups(meters, "absent")).isZero();
            assertThat(joinCommits(meters)).isZero();
            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(100);
            assertThat(base.get("key-5")).isEqualTo("0@155");
            assertThat(base.get("key-40")).isEqualTo("0@140");
            assertThat(base.get("key-65")).isEqualTo("0@165");
            assertThat(base.get("key-70")).isEqualTo("0@70");
            assertThat(meters.get("rollout.merge.key.addresses.bytes").gauge().value())
                    .isGreaterThan(0);
        }
    }

    @Test
    void aKeyTheBookHoldsIsNotProbedInTheKeyFilterANewKeyIs() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-no-probe"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99
            merge(table, 0, puts(0, 100, 0, 50, 1)); // key-0..49 again: the book reads the base
            double before =
                    meters.get("rollout.merge.key.filter.probes").counter().count();
            List<RolloutRow> round = new ArrayList<>(puts(0, 150, 0, 10, 2)); // key-0..9: updates the book holds
            round.addAll(puts(0, 160, 1_000, 10, 2)); // key-1000..1009: new

            merge(table, 0, round);

            // the new keys only: the book's keys need no probe of the filter
            assertThat(meters.get("rollout.merge.key.filter.probes").counter().count() - before)
                    .isEqualTo(10);
            assertThat(joinCommits(meters)).isZero();
            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(110);
            assertThat(base.get("key-5")).isEqualTo("0@155");
            assertThat(base.get("key-1005")).isEqualTo("0@165");
        }
    }

    @Test
    void aGenerationAdoptedWholeIsInTheBookFromItsCommitWithoutARead() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-adopted"));
        TableSettings adoptAll = TableSettings.DEFAULTS.with(TableSettings.MERGE_ADOPT_MIN_ROWS, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(location, adoptAll, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99, adopted; the book is not in use yet
            merge(table, 0, puts(0, 100, 0, 50, 1)); // key-0..49 updated: the book reads the base, then takes these in
            assertThat(meters.get("rollout.merge.key.addresses.keys.adopted")
                            .counter()
                            .count())
                    .isEqualTo(50);
            double read = keysRead(meters);
            double trusted = trusted(meters);

            // key-0..9 once more: replaced unread where the commit that took them in placed them (some, not all,
            // so a row placed one off would leave a key twice and lose another)
            merge(table, 0, puts(0, 150, 0, 10, 2));

            assertThat(keysRead(meters))
                    .as("no fragment read: the new one was taken in")
                    .isEqualTo(read);
            assertThat(trusted(meters) - trusted).isEqualTo(10);
            assertThat(taken(meters)).isZero();
            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(100);
            assertThat(base.get("key-5")).isEqualTo("0@155");
            assertThat(base.get("key-10")).isEqualTo("0@110");
            assertThat(base.get("key-60")).isEqualTo("0@60");
        }
    }

    @Test
    void withTheBookOffEveryUpdateGoesThroughTheJoin() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-off"));
        TableSettings off = TableSettings.DEFAULTS.with(TableSettings.MERGE_KEY_ADDRESSES_BYTES, 0L);
        try (RolloutTable table = RolloutTable.createOrOpen(location, off, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0));
            merge(table, 0, puts(0, 100, 0, 50, 1));
            assertThat(lookups(meters, "found")).isZero();
            assertThat(joinCommits(meters)).isEqualTo(1);
            assertThat(baseRows(location)).hasSize(100).containsEntry("key-5", "0@105");
        }
    }

    @Test
    void addressesOfRowsACompactionMovedAreNotUsed() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-compacted"));
        // a small book: 7,166 keys, so the compacted fragment is passed over
        TableSettings small = TableSettings.DEFAULTS.with(TableSettings.MERGE_KEY_ADDRESSES_BYTES, 256L << 10);
        try (RolloutTable table = RolloutTable.createOrOpen(location, small, meters)) {
            for (int g = 0; g < 4; g++) {
                merge(table, 0, puts(0, g * 2_500L, g * 2_500, 2_500, g)); // key-0..9999, four fragments
            }
            merge(table, 0, puts(0, 10_000, 6_000, 10, 4)); // key-6000..6009: found in the third fragment
            assertThat(lookups(meters, "found")).isEqualTo(10);

            // the rows of key-2500..9999, key-6000..6009's newest among them, move to one fragment of 7,500 rows,
            // passed over: every address the book held for them is stale
            assertThat(table.maintenance().compact(1_000_000).fragmentsAfter()).isEqualTo(2);
            merge(table, 0, puts(0, 10_010, 6_000, 20, 5)); // key-6000..6019

            assertThat(lookups(meters, "found")).isEqualTo(10); // none more
            assertThat(lookups(meters, "stale")).isEqualTo(20); // key-6000..6019, moved by the compaction
            Map<String, String> base = baseRows(location);
            assertThat(base).hasSize(10_000);
            assertThat(base.get("key-6005")).isEqualTo("0@10015");
            assertThat(base.get("key-6019")).isEqualTo("0@10029");
            assertThat(base.get("key-6020")).isEqualTo("0@6020");
        }
    }

    /**
     * A row a delete removed is not returned at its address, so the key is looked up exactly. Here the difference
     * shows: once the delete is dropped from beside the base, a value older than the deleted one lands as the join
     * finds no row of its key, where the deleted row would have won over it.
     */
    @Test
    void aDeletedRowsAddressDoesNotStandForItsKey() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-deleted"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            merge(table, 0, List.of(put(GENERATOR, 0, 0, "k", 10), put(GENERATOR, 0, 1, "j", 10)));
            merge(table, 0, List.of(delete(0, 2, "k", 11)));
            assertThat(lookups(meters, "found")).isEqualTo(1); // the delete found k's row by its address
            assertThat(table.maintenance().dropDeletes(Duration.ZERO).dropped()).isEqualTo(1);

            merge(table, 1, List.of(put(GENERATOR, 1, 0, "k", 5))); // older than the deleted value

            assertThat(lookups(meters, "stale")).isEqualTo(1);
            assertThat(baseRows(location)).containsOnly(Map.entry("j", "0@1"), Map.entry("k", "1@0"));
        }
    }

    /**
     * A restore takes away fragments the book read (and lance-core numbers new ones above every id it gave out, so
     * none comes back under an old id): the address of a row moved before the restore is not used.
     */
    @Test
    void anAddressInAFragmentARestoreTookAwayIsNotUsed() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-restore"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99: fragment 0
            long restored = latestVersion(location);
            merge(table, 0, puts(0, 100, 5, 1, 1)); // key-5 moves to fragment 1
            merge(table, 0, puts(0, 101, 6, 1, 2)); // the book reads fragment 1: key-5 there
            forgetGenerations(location, "-o100-100", "-o101-101"); // as their collection after the merge does
            restore(location, restored); // key-5 is back in fragment 0, fragment 1 is gone
            merge(table, 0, puts(0, 102, 50, 1, 3)); // key-50 moves to a new fragment
            assertThat(lookups(meters, "stale")).isZero();

            merge(table, 0, puts(0, 103, 5, 1, 4)); // key-5 again: the book still places it in fragment 1

            assertThat(lookups(meters, "stale")).isEqualTo(1);
            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(100);
            assertThat(base.get("key-5")).isEqualTo("0@103");
            assertThat(base.get("key-50")).isEqualTo("0@102");
            assertThat(base.get("key-6")).isEqualTo("0@6");
        }
    }

    /**
     * A small book (7,166 keys), no file: a fragment of more rows than it holds is passed over. Rows are written, not
     * adopted, so the large fragment is the commit's own (the book takes adopted generations in by their keys).
     */
    private static final TableSettings SMALL_BOOK = TableSettings.DEFAULTS
            .with(TableSettings.MERGE_KEY_ADDRESSES_BYTES, 256L << 10)
            .with(TableSettings.MERGE_KEY_ADDRESSES_FILE_MAX_BYTES, 0L)
            .with(TableSettings.MERGE_ADOPT_GENERATIONS, false);

    private static List<RolloutRow> concat(List<RolloutRow> a, List<RolloutRow> b) {
        List<RolloutRow> both = new ArrayList<>(a);
        both.addAll(b);
        return both;
    }

    /**
     * A row this committer replaced is never replaced again unread at its old address: here the book still places the
     * key there (its new row sits in a fragment too large for the book), and the fragment's deletions are the book's
     * own, so only the committer's record of the addresses it deleted at tells the row is gone.
     */
    @Test
    void aRowThisCommitterReplacedIsNotReplacedAgainAtItsOldAddress() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-own-delete"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, SMALL_BOOK, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99: fragment 0
            merge(table, 0, puts(0, 100, 0, 10, 1)); // key-0..9: the book reads fragment 0
            // key-50 replaced unread in fragment 0; its new row lands beside 8,000 new keys, a fragment passed over
            merge(table, 0, concat(puts(0, 110, 50, 1, 2), puts(0, 111, 1_000, 8_000, 2)));
            assertThat(trusted(meters)).isEqualTo(1);

            merge(table, 0, puts(0, 8_111, 50, 1, 3)); // key-50 again: the book still places it in fragment 0

            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(8_100);
            assertThat(base.get("key-50")).isEqualTo("0@8111");
            assertThat(trusted(meters)).isEqualTo(1);
            assertThat(lookups(meters, "stale")).isEqualTo(1);
        }
    }

    /**
     * A row another committer replaced (a second merge-worker of the table) is read, not trusted: its fragment's
     * deletions are no longer the ones the book saw. Here its new row sits in a fragment too large for the book, which
     * still places the key at the old row.
     */
    @Test
    void aRowAnotherCommitterReplacedIsReadNotTrusted() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-other-committer"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, SMALL_BOOK, meters);
                RolloutTable other = RolloutTable.createOrOpen(location, SMALL_BOOK, new SimpleMeterRegistry())) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99: fragment 0
            merge(table, 0, puts(0, 100, 0, 10, 1)); // key-0..9: the book reads fragment 0
            // the other committer replaces key-50, its new row beside 8,000 new keys
            merge(other, 1, concat(puts(1, 0, 50, 1, 2), puts(1, 1, 1_000, 8_000, 2)));

            merge(table, 0, puts(0, 110, 50, 1, 3)); // key-50, newer: the book places it in fragment 0

            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(8_100);
            assertThat(base.get("key-50")).isEqualTo("0@110");
            assertThat(trusted(meters)).isZero();
            assertThat(lookups(meters, "stale")).isEqualTo(1);
        }
    }

    /**
     * Fragments a restore took away and another brought back are read afresh: slots of the book's earlier read may point
     * at rows someone else deleted meanwhile. Here key-5's row in such a fragment was deleted by another writer, whose
     * new row of key-5 sits in a fragment too large for the book.
     */
    @Test
    void fragmentsARestoreBroughtBackAreReadAfreshNotTrustedFromTheirEarlierRead() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-restored-back"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, SMALL_BOOK, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99: fragment 0
            long before = latestVersion(location);
            merge(table, 0, puts(0, 100, 0, 10, 1)); // key-0..9 again, in fragment 1; the book reads fragment 0
            merge(table, 0, puts(0, 110, 20, 1, 2)); // key-20: the book reads fragment 1, key-5 there
            long after = latestVersion(location);
            restore(location, before); // fragment 1 gone
            table.merges().catchUp(); // and gone from the book
            restore(location, after); // fragment 1 back
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(location.uri())
                            .build()) {
                base.delete("record_id = 'key-5'"); // another writer replaces key-5
            }
            appendWithLance(location, concat(puts(1, 0, 5, 1, 3), puts(1, 1, 100_000, 8_000, 3)));
            double trustedBefore = trusted(meters);

            merge(table, 0, puts(0, 111, 5, 1, 4)); // key-5, newer still

            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(8_100);
            assertThat(base.get("key-5")).isEqualTo("0@111");
            assertThat(trusted(meters)).isEqualTo(trustedBefore);
        }
    }

    /** A key whose hash in the book another key shares is found only at its own row, never at the other's. */
    @Test
    void aRowAtAnAddressCountsOnlyForTheKeyItHolds() throws Exception {
        TableLocation location = TableLocation.local(freshDir("book-collision"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            merge(table, 0, puts(0, 0, 0, 10, 0)); // key-0..9, read in order: the shared slot ends with key-9's
        }
        KeyAddresses book = new KeyAddresses(new SimpleMeterRegistry(), 1L << 20, hash -> 7, null, 0, null);
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            // the first find reads the fragment, and key-0's row from it, by its key, not by the shared slot
            assertThat(book.find(base, base.getFragments(), List.of(row("key-0")), 1, Set.of("key-0"))
                            .rows()
                            .get("key-0")
                            .get(0)
                            .rowOffset())
                    .isZero();
            // the fragment read already: key-3 and key-9 are placed by the shared slot, whose row is key-9's
            KeyAddresses.Found found = book.find(
                    base, base.getFragments(), List.of(row("key-3"), row("key-9")), 2, Set.of("key-3", "key-9"));
            assertThat(found.rows()).containsOnlyKeys("key-9");
            assertThat(found.rows().get("key-9").get(0).rowOffset()).isEqualTo(9);
            assertThat(found.missed()).containsExactly("key-3");
        }
    }

    /**
     * A row is replaced unread only for the key whose two hashes its slot holds (here every key shares the first), and
     * only by a row newer than every row of its fragment; otherwise it is read and compared.
     */
    @Test
    void aRowIsReplacedUnreadOnlyByANewerRowOfTheKeyWhoseBothHashesItsSlotHolds() throws Exception {
        TableLocation location = TableLocation.local(freshDir("book-unread"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            merge(table, 0, puts(0, 0, 0, 10, 0)); // key-0..9 at offsets 0..9: the shared slot ends with key-9's
        }
        KeyAddresses book = new KeyAddresses(new SimpleMeterRegistry(), 1L << 20, hash -> 7, null, 0, null);
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build();
                MergeSource round = new MergeSource()) {
            book.find(base, base.getFragments(), List.of(row("key-0")), 1, Set.of("key-0")); // reads the fragment
            try (VectorSchemaRoot rows = ArrowRows.toRoot(
                    allocator,
                    List.of(
                            put(GENERATOR, 0, 100, "key-3", 1),
                            put(GENERATOR, 0, 101, "key-9", 1),
                            put(GENERATOR, 0, 5, "key-9", 1)))) {
                round.addAll(rows, allocator);
            }

            KeyAddresses.Found found =
                    book.find(base, base.getFragments(), List.of(round.row(0), round.row(1)), 2, Set.of());
            assertThat(found.replaced()).containsOnlyKeys("key-9");
            assertThat(found.replaced().get("key-9") & 0xFFFF_FFFFL).isEqualTo(9);
            assertThat(found.rows()).isEmpty();
            assertThat(found.missed()).containsExactly("key-3"); // read at key-9's row: not its own

            // key-9 at an offset below the newest of its fragment: read, for the rule to compare
            found = book.find(base, base.getFragments(), List.of(round.row(2)), 1, Set.of());
            assertThat(found.replaced()).isEmpty();
            assertThat(found.rows()).containsOnlyKeys("key-9");
        }
    }

    @Test
    void aFewKeysOfALargeRoundDoNotFillTheBookTheyAreTheFiltersFalsePositives() throws Exception {
        TableLocation location = TableLocation.local(freshDir("book-false-positives"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            merge(table, 0, puts(0, 0, 0, 10, 0));
        }
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        KeyAddresses book = new KeyAddresses(meters, 1L << 20);
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            KeyAddresses.Found found =
                    book.find(base, base.getFragments(), List.of(row("key-3")), 1_000, Set.of("key-3"));
            assertThat(found.rows()).isEmpty();
            assertThat(found.missed()).containsExactly("key-3");
            assertThat(book.sizeBytes()).isZero();
            assertThat(keysRead(meters)).isZero();

            found = book.find(base, base.getFragments(), List.of(row("key-3")), 100, Set.of("key-3"));
            assertThat(found.rows()).containsOnlyKeys("key-3");
            assertThat(keysRead(meters)).isEqualTo(10);
        }
    }

    private static MergeSource.Row row(String key) {
        return new MergeSource.Row(key.getBytes(StandardCharsets.UTF_8), KeyFilter.hash(key), null, 0, null, 0);
    }

    /** Removes the seals and files of the generations whose names end so. */
    private static void forgetGenerations(TableLocation location, String... suffixes) throws Exception {
        try (Stream<Path> files = Files.walk(Path.of(location.uri()))) {
            for (Path path : files.sorted(Comparator.reverseOrder()).toList()) {
                for (Path part : Path.of(location.uri()).relativize(path)) {
                    String name = part.toString().replace(".json", "");
                    if (Arrays.stream(suffixes).anyMatch(name::endsWith)) {
                        Files.delete(path);
                        break;
                    }
                }
            }
        }
    }

    @Test
    void aRestartedCommitterReadsTheNewestFragmentsAgain() throws Exception {
        TableLocation location = TableLocation.local(freshDir("book-restart"));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            merge(table, 0, puts(0, 0, 0, 100, 0));
        }
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            merge(table, 0, puts(0, 100, 0, 30, 1));
            assertThat(lookups(meters, "found")).isEqualTo(30);
            assertThat(keysRead(meters)).isEqualTo(100);
            assertThat(baseRows(location)).hasSize(100).containsEntry("key-29", "0@129");
        }
    }

    private static double fileHints(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.key.addresses.file.hints").counter().count();
    }

    private static long fileBuilds(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.key.addresses.file.builds").timer().count();
    }

    private static void awaitFileBuild(RolloutTable table) {
        TableSeams.mergeRound(table).keyAddresses().fileBuild().join();
    }

    /** A small book (7,166 keys) and a folder of files of the test's own. */
    private static TableSettings smallBookWithFile(String name) {
        return TableSettings.DEFAULTS
                .with(TableSettings.MERGE_KEY_ADDRESSES_BYTES, 256L << 10)
                .with(TableSettings.MERGE_KEY_ADDRESSES_FILE_DIR, freshDir(name).toString());
    }

    /**
     * Updates of old keys the book no longer holds: the first round goes through the join and has the file of every
     * key's address built; from then on such keys are found at the file's addresses, each confirmed by the take. A
     * restarted committer opens the file it left, and a compaction that moved the rows makes the file's addresses
     * stale (each such key through the join, never a wrong row) and has it built again.
     */
    @Test
    void updatesOfOldKeysTheBookDoesNotHoldAreFoundThroughTheFileWhichOutlivesARestart() throws Exception {
        TableLocation location = TableLocation.local(freshDir("file-old-keys"));
        TableSettings settings = smallBookWithFile("file-old-keys-files");
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, settings, meters)) {
            for (int g = 0; g < 8; g++) {
                merge(table, 0, puts(0, g * 2_500L, g * 2_500, 2_500, g)); // key-0..19999, eight fragments
            }
            merge(table, 0, puts(0, 20_000, 0, 100, 10)); // key-0..99: older than the book holds
            assertThat(lookups(meters, "found")).isZero();
            assertThat(joinCommits(meters)).isEqualTo(1);
            awaitFileBuild(table);
            assertThat(fileBuilds(meters)).isEqualTo(1);

            merge(table, 0, puts(0, 20_100, 100, 100, 11)); // key-100..199
            assertThat(fileHints(meters)).isEqualTo(100);
            assertThat(lookups(meters, "found")).isEqualTo(100);
            assertThat(trusted(meters)).as("the fragment as the build read it").isEqualTo(100);
            assertThat(joinCommits(meters)).isEqualTo(1);
        }
        SimpleMeterRegistry restarted = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, settings, restarted)) {
            merge(table, 0, puts(0, 20_200, 200, 100, 12)); // key-200..299
            assertThat(fileHints(restarted))
                    .as("the file left before the restart")
                    .isEqualTo(100);
            assertThat(lookups(restarted, "found")).isEqualTo(100);
            assertThat(trusted(restarted))
                    .as("the deletes made in the fragment since the build were before the restart: read")
                    .isZero();
            awaitFileBuild(table);
            assertThat(fileBuilds(restarted))
                    .as("built again: more of its rows read than trusted")
                    .isEqualTo(1);
            merge(table, 0, puts(0, 20_300, 300, 50, 12)); // key-300..349, in the same fragment
            assertThat(fileHints(restarted)).isEqualTo(150);
            assertThat(trusted(restarted))
                    .as("the fragment as the new build read it")
                    .isEqualTo(50);

            // every row but the first fragment's (the commits' fence) moves: the file's addresses of them point at
            // fragments that are gone
            assertThat(table.maintenance().compact(1_000_000).fragmentsAfter()).isLessThan(4);
            merge(table, 0, puts(0, 20_350, 2_500, 100, 13)); // key-2500..2599, in the second fragment before
            assertThat(lookups(restarted, "stale")).isEqualTo(100);
            assertThat(lookups(restarted, "found")).isEqualTo(150);
            assertThat(joinCommits(restarted)).isEqualTo(1);
            awaitFileBuild(table);
            assertThat(fileBuilds(restarted))
                    .as("built again after the compaction")
                    .isEqualTo(2);

            merge(table, 0, puts(0, 20_450, 2_600, 100, 14)); // key-2600..2699
            assertThat(fileHints(restarted)).isEqualTo(350);
            assertThat(lookups(restarted, "found")).isEqualTo(250);
            assertThat(joinCommits(restarted)).isEqualTo(1);
        }
        Map<String, String> base = baseRows(location); // fails on a key held twice
        assertThat(base).hasSize(20_000);
        assertThat(base.get("key-50")).isEqualTo("0@20050");
        assertThat(base.get("key-150")).isEqualTo("0@20150");
        assertThat(base.get("key-250")).isEqualTo("0@20250");
        assertThat(base.get("key-320")).isEqualTo("0@20320");
        assertThat(base.get("key-2550")).isEqualTo("0@20400");
        assertThat(base.get("key-2650")).isEqualTo("0@20500");
        assertThat(base.get("key-550")).isEqualTo("0@550");
    }

    /**
     * A row this committer replaced through the file is not replaced again at the file's address: the file still
     * places the key there (its new row sits in a fragment too large for the book), and only the committer's record of
     * the addresses it deleted at tells the row is gone.
     */
    @Test
    void aRowReplacedThroughTheFileIsNotReplacedAgainAtTheFilesAddress() throws Exception {
        TableLocation location = TableLocation.local(freshDir("file-own-delete"));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, smallBookWithFile("file-own-delete-files"), meters)) {
            for (int g = 0; g < 8; g++) {
                merge(table, 0, puts(0, g * 2_500L, g * 2_500, 2_500, g)); // key-0..19999, eight fragments
            }
            merge(table, 0, puts(0, 20_000, 0, 100, 10)); // key-0..99: through the join, then the file is built
            awaitFileBuild(table);
            // key-100 replaced unread where the file places it; its new row lands beside 8,000 new keys
            merge(table, 0, concat(puts(0, 20_100, 100, 1, 11), puts(0, 20_101, 100_000, 8_000, 11)));
            assertThat(trusted(meters)).isEqualTo(1);

            merge(table, 0, puts(0, 28_101, 100, 1, 12)); // key-100 again: the file still places it in fragment 0

            Map<String, String> base = baseRows(location); // fails on a key held twice
            assertThat(base).hasSize(28_000);
            assertThat(base.get("key-100")).isEqualTo("0@28101");
            assertThat(trusted(meters)).isEqualTo(1);
            assertThat(lookups(meters, "stale")).isEqualTo(1);
        }
    }

    /** A base whose file would be larger than the setting allows has none: its old keys go through the join. */
    @Test
    void aBaseLargerThanTheFileMayBeHasNoFile() throws Exception {
        TableLocation location = TableLocation.local(freshDir("file-too-large"));
        TableSettings settings = smallBookWithFile("file-too-large-files")
                .with(TableSettings.MERGE_KEY_ADDRESSES_FILE_MAX_BYTES, 16L * 19_999); // one row short
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, settings, meters)) {
            for (int g = 0; g < 8; g++) {
                merge(table, 0, puts(0, g * 2_500L, g * 2_500, 2_500, g)); // key-0..19999
            }
            merge(table, 0, puts(0, 20_000, 0, 100, 10)); // key-0..99: older than the book holds
            awaitFileBuild(table);
            merge(table, 0, puts(0, 20_100, 100, 100, 11)); // key-100..199
            assertThat(fileBuilds(meters)).isZero();
            assertThat(fileHints(meters)).isZero();
            assertThat(joinCommits(meters)).isEqualTo(2);
            assertThat(meters.get("rollout.merge.key.addresses.file.bytes")
                            .gauge()
                            .value())
                    .isZero();
        }
        assertThat(baseRows(location)).hasSize(20_000).containsEntry("key-150", "0@20150");
    }

    /**
     * Rows that landed in the base another way (a plain append beside the merges) are read into the committer's key
     * filter and its book by {@link TableMerges#catchUp}, so the next commit does not read them; a book never filled
     * stays empty.
     */
    @Test
    void catchUpReadsRowsAppendedBesideTheMergesIntoAFilledBookOnly() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        TableLocation location = TableLocation.local(freshDir("book-catch-up"));
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            merge(table, 0, puts(0, 0, 0, 100, 0)); // key-0..99
            appendWithLance(location, puts(1, 0, 1_000, 10, 0)); // key-1000..1009
            table.merges().catchUp();
            assertThat(keysRead(meters)).as("a book never filled stays so").isZero();

            merge(table, 0, puts(0, 100, 0, 50, 1)); // updates: the book is filled with all 110 keys
            assertThat(keysRead(meters)).isEqualTo(110);
            appendWithLance(location, puts(1, 10, 2_000, 10, 0)); // key-2000..2009
            table.merges().catchUp(); // the 50 rows the commit wrote, and the 10 beside
            assertThat(keysRead(meters)).isEqualTo(170);

            merge(table, 0, puts(0, 150, 2_000, 10, 2)); // updates of the rows appended beside
            assertThat(keysRead(meters))
                    .as("read by the catch-up, not by the commit")
                    .isEqualTo(170);
            assertThat(baseRows(location)).hasSize(120).containsEntry("key-2005", "0@155");
        }
    }

    private static double keysRead(SimpleMeterRegistry meters) {
        return meters.get("rollout.merge.key.addresses.keys.read").counter().count();
    }
}
