package dev.rolloutingest.table.maintenance;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.Transaction;
import org.lance.index.Index;
import org.lance.index.IndexOptions;
import org.lance.index.IndexParams;
import org.lance.index.IndexType;
import org.lance.index.scalar.BTreeIndexParams;
import org.lance.operation.CreateIndex;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The scalar index on record_id that point lookups and merge-inserts use: created once, brought up to date in tiered
 * segments as merges add fragments, rebuilt after a compaction.
 */
public final class KeyIndex {
    private static final Logger log = LoggerFactory.getLogger(KeyIndex.class);

    /** The index's name in the base table. */
    public static final String NAME = "record_id_idx";

    private static final String FRAGMENT_REUSE_INDEX = "__lance_frag_reuse";

    /** Commits of the index tried before a run of retryable conflicts fails the upkeep. */
    private static final int COMMIT_ATTEMPTS = 5;

    private final LanceIo lance;

    KeyIndex(LanceIo lance) {
        this.lance = lance;
    }

    /** Creates the record_id index when the table has none (tables made before it existed, or new ones). */
    void ensure() {
        for (int attempt = 1; ; attempt++) {
            try (Dataset base = lance.openBase()) {
                if (find(base).isPresent()) {
                    return;
                }
                create(base, false);
                log.info("Table {}: created the {} index on {}", lance.location(), NAME, RolloutSchema.RECORD_ID);
                return;
            } catch (RuntimeException e) {
                // Apps starting together race to create it; the loser sees it exists on the next look.
                if (attempt >= 10) {
                    throw new RolloutTableException(
                            "Table " + lance.location() + ": creating the " + NAME + " index failed: " + e.getMessage(),
                            e);
                }
                sleepQuietly(20L * attempt);
            }
        }
    }

    /**
     * Brings the record_id index up to date: each merge adds a fragment the index does not cover yet, and a
     * lookup scans such fragments in full (about 0.25 ms per 1,000 rows), so once more than
     * {@code maxUnindexedRows} rows wait (0 = whenever any do) they get an index segment of their own.
     *
     * <p>Why segments: lance-core 7.0.0's {@code optimizeIndices} rewrites the whole BTREE (about 0.3 s per
     * million rows) and gives it a new id, so the next merge-insert reads every index page cold again; under
     * sustained load that was most of the merge-worker's time. A segment over only the new fragments costs
     * 10-60 ms whatever the table size. Segments are tiered under a cap ({@link KeyIndexTiers}): no take-up
     * re-indexes more than the cap, however large the table (a whole rebuild took 10 s at 13M rows on 2 cores and
     * showed as a spike of pending generations). {@code optimizeIndices} is never called: in 7.0.0 it fails on an
     * index with more than one segment ("Index with id ... does not exist") and leaves an orphan directory.
     * After a compaction the index is rebuilt instead: see {@link TableMaintenance#compact}.
     */
    TableMaintenance.IndexResult optimize(KeyIndexTiers tiers) {
        long started = System.nanoTime();
        try (Dataset base = lance.openBase()) {
            List<Index> segments = keySegments(base);
            Set<Integer> indexed = indexedFragments(segments);
            Map<Integer, Long> rowsOf = new HashMap<>();
            List<Integer> unindexed = new ArrayList<>();
            long unindexedRows = 0;
            for (Fragment fragment : base.getFragments()) {
                long rows = fragment.metadata().getPhysicalRows();
                rowsOf.put(fragment.getId(), rows);
                if (!indexed.contains(fragment.getId())) {
                    unindexed.add(fragment.getId());
                    unindexedRows += rows;
                }
            }
            // A new table's index covers no fragment: the first take-up builds it whole (it is small then). After a
            // compaction the index is rebuilt (as compact() does right away; this covers a crash in between).
            boolean rebuild = indexed.isEmpty()
                    ? tiers.takeUp(unindexedRows)
                    : coverageStale(base, segments, indexed, rowsOf.keySet());
            boolean takeUp = !rebuild && tiers.takeUp(unindexedRows);
            String how = "";
            int segmentsAfter = segments.size();
            if (rebuild) {
                create(base, true);
                how = "rebuilt the " + NAME + " index";
                segmentsAfter = 1;
            } else if (takeUp) {
                List<Index> merged = tiers.toMerge(segments, i -> rows(i, rowsOf), unindexedRows);
                List<Integer> fragments = new ArrayList<>(unindexed);
                merged.forEach(i -> i.fragments().ifPresent(fragments::addAll));
                addSegment(base, fragments);
                segmentsAfter = segments.size() - merged.size() + 1;
                how = merged.isEmpty()
                        ? "gave the new fragments a segment of their own in the " + NAME + " index"
                        : "merged the new fragments and " + merged.size() + " open segments ("
                                + merged.stream()
                                        .mapToLong(i -> rows(i, rowsOf))
                                        .sum() + " rows) into one segment of"
                                + " the " + NAME + " index";
            }
            if (rebuild || remapped(base)) {
                dropRemapping(); // after this rebuild, or one by another writer, or by a build before this one
            }
            long millis = (System.nanoTime() - started) / 1_000_000;
            if (rebuild || takeUp) {
                log.info(
                        "Table {}: {} ({} fragments, {} rows were not indexed; {} segments) in {} ms",
                        lance.location(),
                        how,
                        rowsOf.size(),
                        unindexedRows,
                        segmentsAfter,
                        millis);
            }
            return new TableMaintenance.IndexResult(
                    rebuild, takeUp, rowsOf.size(), unindexedRows, segmentsAfter, millis);
        }
    }

    private static long rows(Index segment, Map<Integer, Long> rowsOf) {
        return segment.fragments().orElse(List.of()).stream()
                .mapToLong(f -> rowsOf.getOrDefault(f, 0L))
                .sum();
    }

    /**
     * Builds a BTREE segment over exactly these fragments and commits it into the index; segments it covers
     * whole are replaced (one it covers in part is refused by lance-core, so coverage is never lost).
     */
    private static void addSegment(Dataset base, List<Integer> fragments) {
        IndexParams params = IndexParams.builder()
                .setScalarIndexParams(BTreeIndexParams.builder().build())
                .build();
        Index segment = base.createIndex(IndexOptions.builder(List.of(RolloutSchema.RECORD_ID), IndexType.BTREE, params)
                .withIndexName(NAME)
                .withFragmentIds(fragments)
                .replace(true)
                .build());
        base.commitExistingIndexSegments(NAME, RolloutSchema.RECORD_ID, List.of(segment));
    }

    /**
     * Rebuilds the index after a compaction. A merge-worker's index upkeep may rebuild it at the same moment (it
     * sees the compaction too), and lance-core refuses the second CreateIndex with a retryable conflict: then the
     * index is looked at again, and left as it is when the other writer's rebuild already covers the compaction.
     */
    void rebuild(Runnable beforeCommit) {
        long started = System.nanoTime();
        for (int attempt = 1; ; attempt++) {
            try (Dataset base = lance.openBase()) {
                if (attempt > 1 && !keyIndexStale(base)) {
                    log.info(
                            "Table {}: another writer rebuilt the {} index after the compaction",
                            lance.location(),
                            NAME);
                    dropRemapping();
                    return;
                }
                if (attempt == 1) {
                    beforeCommit.run();
                }
                create(base, true);
                log.info(
                        "Table {}: rebuilt the {} index after compaction in {} ms",
                        lance.location(),
                        NAME,
                        (System.nanoTime() - started) / 1_000_000);
                dropRemapping();
                return;
            } catch (RuntimeException e) {
                if (!FencedCommit.isPreempted(e) || attempt >= COMMIT_ATTEMPTS) {
                    throw e;
                }
                log.info(
                        "Table {}: the {} index rebuild was preempted ({}); looking again",
                        lance.location(),
                        NAME,
                        e.getMessage());
            }
        }
    }

    /** The base holds the row remapping of a deferred-remap compaction (see {@link #dropRemapping}). */
    private static boolean remapped(Dataset base) {
        return !remappings(base).isEmpty();
    }

    private static List<Index> remappings(Dataset base) {
        return base.getIndexes().stream()
                .filter(i -> FRAGMENT_REUSE_INDEX.equals(i.name()))
                .toList();
    }

    /**
     * Drops the fragment-reuse index that deferred-remap compactions leave, once no index needs it (the record_id
     * index was built after them: {@link #compactedSince}). lance-core 7.0.0 reads it whole on every commit and every
     * index listing, building a map of every row the compactions rewrote (~0.6 us a row: 3.3 s a commit after 5M rows
     * were compacted), carries it through later commits and index builds, and has no call that trims it. Exactly the
     * remapping read here is removed: one a compaction committed meanwhile stays. Best effort: a drop that fails is
     * tried again at the next upkeep.
     */
    void dropRemapping() {
        try (Dataset base = lance.openBase()) {
            List<Index> remappings = remappings(base);
            if (remappings.isEmpty()) {
                return;
            }
            List<Index> segments = keySegments(base);
            if (segments.isEmpty() || compactedSince(base, segments)) {
                return; // the index still needs the remapping until it is rebuilt
            }
            long started = System.nanoTime();
            try (Transaction drop = new Transaction.Builder()
                            .readVersion(base.version())
                            .operation(CreateIndex.builder()
                                    .withNewIndices(List.of())
                                    .withRemovedIndices(remappings)
                                    .build())
                            .build();
                    Dataset dropped = base.commitTransaction(drop)) {
                log.info(
                        "Table {}: dropped the row remapping compactions left (the {} index), as the {} index was built"
                                + " after them, in {} ms (version {})",
                        lance.location(),
                        FRAGMENT_REUSE_INDEX,
                        NAME,
                        (System.nanoTime() - started) / 1_000_000,
                        dropped.version());
            }
        } catch (Exception e) {
            log.info(
                    "Table {}: dropping the {} index failed ({}); trying again at the next upkeep",
                    lance.location(),
                    FRAGMENT_REUSE_INDEX,
                    e.getMessage());
        }
    }

    /** The same remapping: each compaction records its own (a new uuid, the version it read). */
    private static boolean sameRemapping(Index a, Index b) {
        return a.uuid().equals(b.uuid()) && a.datasetVersion() == b.datasetVersion();
    }

    /** True when the index must be rebuilt: a fragment it covers is gone, or a compaction remapped it since. */
    private static boolean keyIndexStale(Dataset base) {
        List<Index> segments = keySegments(base);
        if (segments.isEmpty()) {
            return true;
        }
        Set<Integer> present = new HashSet<>();
        base.getFragments().forEach(f -> present.add(f.getId()));
        return coverageStale(base, segments, indexedFragments(segments), present);
    }

    /** The segments of the record_id index. */
    private static List<Index> keySegments(Dataset base) {
        return base.getIndexes().stream().filter(i -> NAME.equals(i.name())).toList();
    }

    /** The fragments the segments cover. */
    private static Set<Integer> indexedFragments(List<Index> segments) {
        Set<Integer> indexed = new HashSet<>();
        segments.forEach(i -> i.fragments().ifPresent(indexed::addAll));
        return indexed;
    }

    /** The index covers a fragment that is gone ({@code present}: the base's), or a compaction remapped it since. */
    private static boolean coverageStale(
            Dataset base, List<Index> segments, Set<Integer> indexed, Set<Integer> present) {
        return !present.containsAll(indexed) || compactedSince(base, segments);
    }

    /**
     * A deferred-remap compaction remaps the index's fragments (so they look current) and records the remapping in
     * a fragment-reuse index: adding to the index then would drop rows, and dropping the remapping would leave the
     * index with addresses that are gone. The remapping is stamped with the version its compaction read, so one
     * whose compaction read before the index was built and committed after it (lance-core lets both land) looks older
     * than the index: it is new to the index unless the version the oldest segment was built from already held it.
     */
    private static boolean compactedSince(Dataset base, List<Index> segments) {
        List<Index> remappings = remappings(base);
        if (remappings.isEmpty() || segments.isEmpty()) {
            return false;
        }
        long builtFrom =
                segments.stream().mapToLong(Index::datasetVersion).min().orElseThrow();
        if (remappings.stream().anyMatch(r -> r.datasetVersion() >= builtFrom)) {
            return true;
        }
        try (Dataset then = base.checkoutVersion(builtFrom)) {
            List<Index> held = remappings(then);
            return !remappings.stream().allMatch(r -> held.stream().anyMatch(h -> sameRemapping(h, r)));
        } catch (RuntimeException e) {
            return true; // the version the index was built from is gone: rebuild rather than guess
        }
    }

    public static void create(Dataset base, boolean replace) {
        IndexParams params = IndexParams.builder()
                .setScalarIndexParams(BTreeIndexParams.builder().build())
                .build();
        base.createIndex(List.of(RolloutSchema.RECORD_ID), IndexType.BTREE, Optional.of(NAME), params, replace);
    }

    public static Optional<Index> find(Dataset base) {
        return keySegments(base).stream().findFirst();
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RolloutTableException("interrupted", e);
        }
    }
}
