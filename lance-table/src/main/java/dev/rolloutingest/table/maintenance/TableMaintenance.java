package dev.rolloutingest.table.maintenance;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.DroppedDeletes;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Timestamps;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.StorageErrors;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.UInt8Vector;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.lance.Version;
import org.lance.cleanup.CleanupPolicy;
import org.lance.cleanup.RemovalStats;
import org.lance.compaction.Compaction;
import org.lance.compaction.CompactionOptions;
import org.lance.compaction.CompactionPlan;
import org.lance.compaction.CompactionTask;
import org.lance.compaction.RewriteResult;
import org.lance.compaction.TaskData;
import org.lance.index.Index;
import org.lance.index.IndexOptions;
import org.lance.index.IndexParams;
import org.lance.index.IndexType;
import org.lance.index.scalar.BTreeIndexParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Base-table compaction and garbage collection of merged generations.
 *
 * <p>Over 300 lines because compaction, the key index and GC depend on each other's order (the index rebuilt after a
 * compaction, GC after both).
 */
public final class TableMaintenance {
    private static final Logger log = LoggerFactory.getLogger(TableMaintenance.class);

    /** Fragments of the base table before and after a compaction. */
    public record CompactionResult(int fragmentsBefore, int fragmentsAfter) {}

    /**
     * What bringing the record_id index up to date did: rebuilt (the first build, or after a compaction) or took
     * the unindexed fragments up (optimized); segments of the index after it.
     */
    public record IndexResult(
            boolean rebuilt, boolean optimized, int fragments, long unindexedRowsBefore, int segments, long millis) {}

    /** Generations whose folders were deleted, and folders left because they are not yet old enough. */
    public record GcResult(int deletedGenerations, int deletedUnsealedFolders, long oldBaseVersionsRemoved) {}

    /** How many deletes left the base, and the ingest time below which they had to lie. */
    public record DropResult(long dropped, Instant cutoff) {}

    /** The scalar index on record_id that point lookups and merge-inserts use. */
    public static final String KEY_INDEX = "record_id_idx";

    private static final String FRAGMENT_REUSE_INDEX = "__lance_frag_reuse";

    /** Commits of the record_id index tried before a run of retryable conflicts fails the upkeep. */
    private static final int INDEX_COMMIT_ATTEMPTS = 5;

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;

    public TableMaintenance(LanceIo lance, ObjectStore store, GenerationCatalog catalog) {
        this.lance = lance;
        this.store = store;
        this.catalog = catalog;
    }

    /**
     * Compacts the base table, then rebuilds the record_id index. lance-core 7.0.0 aborts the JVM ("An index
     * existed with no fields") when compacting a table with MemWAL initialised unless the index remap is
     * deferred, so it always is; and after a deferred-remap compaction, optimizing the index silently drops
     * the rewritten fragments' rows from it (lance-format/lance#9270), so the index is rebuilt instead.
     *
     * <p>The fragment appends of new keys fence on ({@link FencedCommit#fence}) is left out of the plan: a
     * rewrite of it would be preempted by every append committed while the compaction ran, and under steady
     * merging the compaction would never land.
     *
     * <p>For tests: {@code beforeCommit} runs once the fragments are rewritten, before the compaction commits;
     * {@code beforeKeyIndexRebuild} once the index rebuild has read the compacted version, before it commits.
     */
    public CompactionResult compact(long targetRowsPerFragment, Runnable beforeCommit, Runnable beforeKeyIndexRebuild) {
        try (Dataset base = lance.openBase()) {
            List<Fragment> listed = base.getFragments();
            int before = listed.size();
            if (listed.isEmpty()) {
                return new CompactionResult(0, 0);
            }
            int fence = FencedCommit.fence(listed).getId();
            CompactionOptions options = compactionOptions(targetRowsPerFragment);
            CompactionPlan plan = Compaction.planCompaction(base, options);
            List<RewriteResult> rewritten = new ArrayList<>();
            for (CompactionTask task : plan.getCompactionTasks()) {
                List<FragmentMetadata> planned = task.getTaskData().getFragments();
                List<FragmentMetadata> fragments =
                        planned.stream().filter(f -> f.getId() != fence).toList();
                if (fragments.isEmpty() || (fragments.size() == 1 && planned.size() > 1)) {
                    continue; // only the fence, or one fragment left that the plan meant to join with it
                }
                rewritten.add(
                        new CompactionTask(new TaskData(fragments), plan.getReadVersion(), options).execute(base));
            }
            if (rewritten.isEmpty()) {
                return new CompactionResult(before, before);
            }
            beforeCommit.run();
            Compaction.commitCompaction(base, rewritten, options);
            int fragments;
            try (Dataset after = lance.openBase()) {
                fragments = after.getFragments().size();
                log.info("Table {}: compacted {} fragments into {}", lance.location(), before, fragments);
            }
            rebuildKeyIndex(beforeKeyIndexRebuild);
            return new CompactionResult(before, fragments);
        }
    }

    /** Creates the record_id index when the table has none (tables made before it existed, or new ones). */
    public void ensureKeyIndex() {
        for (int attempt = 1; ; attempt++) {
            try (Dataset base = lance.openBase()) {
                if (keyIndex(base).isPresent()) {
                    return;
                }
                createKeyIndex(base, false);
                log.info("Table {}: created the {} index on {}", lance.location(), KEY_INDEX, RolloutSchema.RECORD_ID);
                return;
            } catch (RuntimeException e) {
                // Apps starting together race to create it; the loser sees it exists on the next look.
                if (attempt >= 10) {
                    throw new RolloutTableException(
                            "Table " + lance.location() + ": creating the " + KEY_INDEX + " index failed: "
                                    + e.getMessage(),
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
     * After a compaction the index is rebuilt instead: see {@link #compact}.
     */
    public IndexResult optimizeKeyIndex(KeyIndexTiers tiers) {
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
                createKeyIndex(base, true);
                how = "rebuilt the " + KEY_INDEX + " index";
                segmentsAfter = 1;
            } else if (takeUp) {
                List<Index> merged = tiers.toMerge(segments, i -> rows(i, rowsOf), unindexedRows);
                List<Integer> fragments = new ArrayList<>(unindexed);
                merged.forEach(i -> i.fragments().ifPresent(fragments::addAll));
                addSegment(base, fragments);
                segmentsAfter = segments.size() - merged.size() + 1;
                how = merged.isEmpty()
                        ? "gave the new fragments a segment of their own in the " + KEY_INDEX + " index"
                        : "merged the new fragments and " + merged.size() + " open segments ("
                                + merged.stream()
                                        .mapToLong(i -> rows(i, rowsOf))
                                        .sum() + " rows) into one segment of"
                                + " the " + KEY_INDEX + " index";
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
            return new IndexResult(rebuild, takeUp, rowsOf.size(), unindexedRows, segmentsAfter, millis);
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
                .withIndexName(KEY_INDEX)
                .withFragmentIds(fragments)
                .replace(true)
                .build());
        base.commitExistingIndexSegments(KEY_INDEX, RolloutSchema.RECORD_ID, List.of(segment));
    }

    /**
     * Rebuilds the index after a compaction. A merge-worker's index upkeep may rebuild it at the same moment (it
     * sees the compaction too), and lance-core refuses the second CreateIndex with a retryable conflict: then the
     * index is looked at again, and left as it is when the other writer's rebuild already covers the compaction.
     */
    private void rebuildKeyIndex(Runnable beforeCommit) {
        long started = System.nanoTime();
        for (int attempt = 1; ; attempt++) {
            try (Dataset base = lance.openBase()) {
                if (attempt > 1 && !keyIndexStale(base)) {
                    log.info(
                            "Table {}: another writer rebuilt the {} index after the compaction",
                            lance.location(),
                            KEY_INDEX);
                    return;
                }
                if (attempt == 1) {
                    beforeCommit.run();
                }
                createKeyIndex(base, true);
                log.info(
                        "Table {}: rebuilt the {} index after compaction in {} ms",
                        lance.location(),
                        KEY_INDEX,
                        (System.nanoTime() - started) / 1_000_000);
                return;
            } catch (RuntimeException e) {
                if (!FencedCommit.isPreempted(e) || attempt >= INDEX_COMMIT_ATTEMPTS) {
                    throw e;
                }
                log.info(
                        "Table {}: the {} index rebuild was preempted ({}); looking again",
                        lance.location(),
                        KEY_INDEX,
                        e.getMessage());
            }
        }
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
        return base.getIndexes().stream()
                .filter(i -> KEY_INDEX.equals(i.name()))
                .toList();
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
     * A deferred-remap compaction remaps the index's fragments (so they look current) and records the remapping
     * in a fragment-reuse index whose version is at least the index's: adding to the index then would drop rows.
     */
    private static boolean compactedSince(Dataset base, List<Index> segments) {
        long keyIndexVersion =
                segments.stream().mapToLong(Index::datasetVersion).min().orElse(Long.MAX_VALUE);
        return base.getIndexes().stream()
                .anyMatch(i -> FRAGMENT_REUSE_INDEX.equals(i.name()) && i.datasetVersion() >= keyIndexVersion);
    }

    public static void createKeyIndex(Dataset base, boolean replace) {
        IndexParams params = IndexParams.builder()
                .setScalarIndexParams(BTreeIndexParams.builder().build())
                .build();
        base.createIndex(List.of(RolloutSchema.RECORD_ID), IndexType.BTREE, Optional.of(KEY_INDEX), params, replace);
    }

    public static Optional<Index> keyIndex(Dataset base) {
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

    /**
     * Every merge and compaction commits a base version and leaves the files it replaced; without cleanup
     * the table only grows. Versions older than twice the grace go (Lance always keeps the latest), so the
     * version GC reads its watermarks from, at least one grace old, usually survives.
     */
    private long cleanupBaseVersions(Instant before) {
        try (Dataset base = lance.openBase()) {
            RemovalStats removed = base.cleanupWithPolicy(CleanupPolicy.builder()
                    .withBeforeTimestampMillis(before.toEpochMilli())
                    // a tagged version (a snapshot) is kept; lance's default fails the whole cleanup on one
                    .withErrorIfTaggedOldVersions(false)
                    .build());
            return removed.getOldVersions();
        } catch (Exception e) { // lance-core throws its store errors as undeclared IOExceptions too
            throw StorageErrors.classify(lance.location().uri(), "cleaning up old versions", e);
        }
    }

    public static CompactionOptions compactionOptions(long targetRowsPerFragment) {
        return CompactionOptions.builder()
                .withDeferIndexRemap(true)
                .withTargetRowsPerFragment(targetRowsPerFragment)
                .build();
    }

    /**
     * Drops the deletes that no older value can reach any more: delete rows (tombstones, {@link Tombstones}) ingested
     * before {@code retention} ago and before the oldest row of every pending generation of the table. A delete stays in
     * the base while a value older than it may still merge (from another partition: keyless records, a grown partition
     * count), so that the value loses to it; once every such value is merged, the row only costs its bytes. Values not
     * sealed yet are ingested after now minus the seal age, far inside the retention. The drop is a fenced commit
     * ({@link FencedCommit}), refused and redone when a merge lands first.
     */
    public DropResult dropDeletes(Duration retention, int attempts) {
        Instant cutoff = Instant.now().minus(retention);
        String filter = Tombstones.CANDIDATES + " AND " + RolloutSchema.INGESTED_AT + " < TIMESTAMP '" + cutoff + "'";
        Instant oldestPending = null;
        boolean pendingRead = false;
        for (int attempt = 0; attempt < attempts; attempt++) {
            try (Dataset base = lance.openBase()) {
                Map<Long, Long> deletes = new HashMap<>(); // row address -> ingested_at (micros)
                Map<Long, long[]> positions = new HashMap<>(); // row address -> {partition, offset}
                Tombstones.forEach(base, filter, (batch, i) -> {
                    long address = ((UInt8Vector) batch.getVector("_rowaddr")).get(i);
                    deletes.put(address, ((TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT)).get(i));
                    positions.put(address, new long[] {
                        ((IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION)).get(i),
                        ((BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET)).get(i)
                    });
                });
                if (!pendingRead && !deletes.isEmpty()) {
                    // only when there is something to drop: the pending generations are read in full for it
                    oldestPending = oldestPendingRow();
                    pendingRead = true;
                    if (oldestPending != null && oldestPending.isBefore(cutoff)) {
                        cutoff = oldestPending;
                    }
                }
                long before = Timestamps.micros(cutoff);
                Map<Integer, List<Integer>> rows = new HashMap<>();
                Map<Integer, Long> droppedOffsets = new HashMap<>(); // partition -> highest offset dropped
                long[] count = {0};
                deletes.forEach((address, ingested) -> {
                    if (ingested < before) {
                        rows.computeIfAbsent((int) (address >>> 32), f -> new ArrayList<>())
                                .add((int) (long) address);
                        long[] at = positions.get(address);
                        droppedOffsets.merge((int) at[0], at[1], Math::max);
                        count[0]++;
                    }
                });
                if (count[0] == 0) {
                    return new DropResult(0, cutoff);
                }
                // before the commit: a tail whose cursor is below a dropped delete must be refused, never answered
                // without it (a failed commit leaves the mark high, which only refuses more)
                DroppedDeletes.raise(store, droppedOffsets);
                try {
                    FencedCommit.commit(
                                    lance,
                                    store,
                                    base,
                                    base.getFragments(),
                                    List.of(),
                                    List.of(),
                                    new FencedCommit.Deletions(rows),
                                    0,
                                    Map.of("rollout.maintenance", "drop deletes ingested before " + cutoff))
                            .dataset()
                            .close();
                    log.info(
                            "Table {}: dropped {} deletes ingested before {} (nothing older can merge)",
                            lance.location(),
                            count[0],
                            cutoff);
                    return new DropResult(count[0], cutoff);
                } catch (FencedCommit.Preempted e) {
                    log.info("{}; dropping deletes again on the newer base", e.getMessage());
                }
            }
        }
        throw new RolloutTableException.Contended(
                lance.location().uri(), "dropping old deletes was preempted " + attempts + " times in a row");
    }

    /** The earliest ingested_at of any row in a pending generation of any shard; null when none is pending. */
    private Instant oldestPendingRow() {
        Map<String, Long> watermarks;
        try (Dataset base = lance.openBase()) {
            watermarks = MemWalWatermarks.read(base);
        }
        Instant oldest = null;
        for (Map.Entry<String, List<GenerationCatalog.Listed>> shard :
                catalog.sealedByShard().entrySet()) {
            long watermark = watermarks.getOrDefault(shard.getKey(), 0L);
            for (GenerationCatalog.Listed generation : shard.getValue()) {
                if (Long.compareUnsigned(generation.generation(), watermark) <= 0) {
                    continue;
                }
                Instant first = earliestRow(generation);
                if (first != null && (oldest == null || first.isBefore(oldest))) {
                    oldest = first;
                }
            }
        }
        return oldest;
    }

    private Instant earliestRow(GenerationCatalog.Listed generation) {
        try (Dataset dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
                org.lance.ipc.LanceScanner scanner = dataset.newScan(new org.lance.ipc.ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.INGESTED_AT))
                        .build());
                org.apache.arrow.vector.ipc.ArrowReader reader = scanner.scanBatches()) {
            long min = Long.MAX_VALUE;
            while (reader.loadNextBatch()) {
                org.apache.arrow.vector.TimeStampMicroTZVector at = (org.apache.arrow.vector.TimeStampMicroTZVector)
                        reader.getVectorSchemaRoot().getVector(RolloutSchema.INGESTED_AT);
                for (int i = 0; i < at.getValueCount(); i++) {
                    min = Math.min(min, at.get(i));
                }
            }
            return min == Long.MAX_VALUE ? null : Timestamps.instant(min);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException.GenerationUnreadable(
                    lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
        }
    }

    /**
     * Deletes generation folders at or below the merged watermark of the newest base version that is at
     * least {@code grace} old: a reader that listed a generation as pending just before its merge committed
     * can still open it for that long. Nothing above a watermark is ever deleted.
     */
    public GcResult collectGarbage(Duration grace) {
        Instant cutoff = Instant.now().minus(grace);
        Map<String, Long> watermarks;
        try (Dataset base = lance.openBase()) {
            Optional<Version> settled = base.listVersions().stream()
                    .filter(v -> !v.getDataTime().toInstant().isAfter(cutoff))
                    .max(Comparator.comparingLong(Version::getId));
            if (settled.isEmpty()) {
                return new GcResult(0, 0, 0);
            }
            try (Dataset old = base.checkoutVersion(settled.get().getId())) {
                watermarks = MemWalWatermarks.read(old);
            }
        }
        int generations = 0;
        int unsealed = 0;
        TreeSet<String> shards = new TreeSet<>(catalog.shards());
        for (ObjectStore.Entry entry : store.list(SealedGeneration.MEM_WAL_DIR)) {
            if (entry.folder() && ShardId.isValid(entry.name())) {
                shards.add(entry.name());
            }
        }
        for (String shard : shards) {
            long watermark = watermarks.getOrDefault(shard, 0L);
            if (watermark == 0) {
                continue;
            }
            TreeSet<String> sealedFolders = new TreeSet<>();
            for (GenerationCatalog.Listed listed : catalog.sealed(shard)) {
                sealedFolders.add(listed.folder());
                if (Long.compareUnsigned(listed.generation(), watermark) <= 0) {
                    // Seal first: a crash in between leaves an unsealed folder, which the next pass removes.
                    store.delete(listed.sealPath());
                    store.delete(listed.datasetPath());
                    generations++;
                }
            }
            for (SealedGeneration.FolderName folder : catalog.datasetFolders(shard)) {
                String name =
                        SealedGeneration.folderName(folder.generation(), folder.firstOffset(), folder.lastOffset());
                if (!sealedFolders.contains(name) && Long.compareUnsigned(folder.generation(), watermark) <= 0) {
                    store.delete(SealedGeneration.MEM_WAL_DIR + "/" + shard + "/" + name);
                    unsealed++;
                }
            }
        }
        long oldVersions = cleanupBaseVersions(cutoff.minus(grace));
        if (generations + unsealed + oldVersions > 0) {
            log.info(
                    "Table {}: GC deleted {} merged generations, {} stale unsealed folders and {} old base versions"
                            + " (grace {})",
                    lance.location(),
                    generations,
                    unsealed,
                    oldVersions,
                    grace);
        }
        return new GcResult(generations, unsealed, oldVersions);
    }
}
