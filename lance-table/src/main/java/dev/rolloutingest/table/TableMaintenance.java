package dev.rolloutingest.table;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.lance.Dataset;
import org.lance.Version;
import org.lance.cleanup.CleanupPolicy;
import org.lance.cleanup.RemovalStats;
import org.lance.compaction.CompactionOptions;
import org.lance.index.Index;
import org.lance.index.IndexParams;
import org.lance.index.IndexType;
import org.lance.index.OptimizeOptions;
import org.lance.index.scalar.BTreeIndexParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Base-table compaction and garbage collection of merged generations. */
public final class TableMaintenance {
    private static final Logger log = LoggerFactory.getLogger(TableMaintenance.class);

    /** Fragments of the base table before and after a compaction. */
    public record CompactionResult(int fragmentsBefore, int fragmentsAfter) {}

    /** What bringing the record_id index up to date did: rebuilt (after a compaction) or optimized. */
    public record IndexResult(boolean rebuilt, boolean optimized, int fragments, long unindexedRowsBefore, long millis) {}

    /** Generations whose folders were deleted, and folders left because they are not yet old enough. */
    public record GcResult(int deletedGenerations, int deletedUnsealedFolders, long oldBaseVersionsRemoved) {}

    /** The scalar index on record_id that point lookups and merge-inserts use. */
    public static final String KEY_INDEX = "record_id_idx";
    private static final String FRAGMENT_REUSE_INDEX = "__lance_frag_reuse";

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;

    TableMaintenance(LanceIo lance, ObjectStore store, GenerationCatalog catalog) {
        this.lance = lance;
        this.store = store;
        this.catalog = catalog;
    }

    /**
     * Compacts the base table, then rebuilds the record_id index. lance-core 7.0.0 aborts the JVM ("An index
     * existed with no fields") when compacting a table with MemWAL initialised unless the index remap is
     * deferred, so it always is; and after a deferred-remap compaction, optimizing the index silently drops
     * the rewritten fragments' rows from it (lance-format/lance#9270), so the index is rebuilt instead.
     */
    CompactionResult compact(long targetRowsPerFragment) {
        try (Dataset base = lance.openBase()) {
            int before = base.getFragments().size();
            base.compact(compactionOptions(targetRowsPerFragment));
            int fragments;
            try (Dataset after = lance.openBase()) {
                fragments = after.getFragments().size();
                log.info("Table {}: compacted {} fragments into {}", lance.location(), before, fragments);
            }
            rebuildKeyIndex();
            return new CompactionResult(before, fragments);
        }
    }

    /** Creates the record_id index when the table has none (tables made before it existed, or new ones). */
    void ensureKeyIndex() {
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
                    throw new RolloutTableException("Table " + lance.location() + ": creating the " + KEY_INDEX
                            + " index failed: " + e.getMessage(), e);
                }
                sleepQuietly(20L * attempt);
            }
        }
    }

    /**
     * Brings the record_id index up to date: each merge adds a fragment the index does not cover yet, and a
     * lookup scans such fragments in full (about 0.25 ms per 1,000 rows); optimizing costs ~0.2 s at 1M rows,
     * so it runs once more than {@code maxUnindexedRows} rows wait (0 = whenever any do). After a compaction
     * the index is rebuilt instead: see {@link #compact}.
     */
    IndexResult optimizeKeyIndex(long maxUnindexedRows) {
        long started = System.nanoTime();
        try (Dataset base = lance.openBase()) {
            Set<Integer> indexed = new HashSet<>();
            base.getIndexes().stream().filter(i -> KEY_INDEX.equals(i.name()))
                    .forEach(i -> i.fragments().ifPresent(indexed::addAll));
            Set<Integer> current = new HashSet<>();
            long unindexedRows = 0;
            for (org.lance.Fragment fragment : base.getFragments()) {
                current.add(fragment.getId());
                if (!indexed.contains(fragment.getId())) {
                    unindexedRows += fragment.metadata().getPhysicalRows();
                }
            }
            // A deferred-remap compaction remaps the index's fragments (so they look current) and records the
            // remapping in a fragment-reuse index whose version is at least the index's: optimizing then would
            // drop rows, so the index is rebuilt (as compact() does right away; this covers a crash in between).
            long keyIndexVersion = base.getIndexes().stream().filter(i -> KEY_INDEX.equals(i.name()))
                    .mapToLong(Index::datasetVersion).min().orElse(Long.MAX_VALUE);
            boolean compactedSince = base.getIndexes().stream().anyMatch(i -> FRAGMENT_REUSE_INDEX.equals(i.name())
                    && i.datasetVersion() >= keyIndexVersion);
            boolean rebuild = !current.containsAll(indexed) || compactedSince;
            boolean optimize = !rebuild && unindexedRows > 0 && unindexedRows > maxUnindexedRows;
            if (rebuild) {
                createKeyIndex(base, true);
            } else if (optimize) {
                base.optimizeIndices(OptimizeOptions.builder().indexNames(List.of(KEY_INDEX)).build());
            }
            long millis = (System.nanoTime() - started) / 1_000_000;
            if (rebuild || optimize) {
                log.info("Table {}: {} the {} index ({} fragments, {} rows were not indexed) in {} ms", lance.location(),
                        rebuild ? "rebuilt" : "optimized", KEY_INDEX, current.size(), unindexedRows, millis);
            }
            return new IndexResult(rebuild, optimize, current.size(), unindexedRows, millis);
        }
    }

    private void rebuildKeyIndex() {
        long started = System.nanoTime();
        try (Dataset base = lance.openBase()) {
            createKeyIndex(base, true);
            log.info("Table {}: rebuilt the {} index after compaction in {} ms", lance.location(), KEY_INDEX,
                    (System.nanoTime() - started) / 1_000_000);
        }
    }

    private static void createKeyIndex(Dataset base, boolean replace) {
        IndexParams params = IndexParams.builder().setScalarIndexParams(BTreeIndexParams.builder().build()).build();
        base.createIndex(List.of(RolloutSchema.RECORD_ID), IndexType.BTREE, Optional.of(KEY_INDEX), params, replace);
    }

    static Optional<Index> keyIndex(Dataset base) {
        return base.getIndexes().stream().filter(i -> KEY_INDEX.equals(i.name())).findFirst();
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
                    .withBeforeTimestampMillis(before.toEpochMilli()).build());
            return removed.getOldVersions();
        }
    }

    static CompactionOptions compactionOptions(long targetRowsPerFragment) {
        return CompactionOptions.builder().withDeferIndexRemap(true).withTargetRowsPerFragment(targetRowsPerFragment).build();
    }

    /**
     * Deletes generation folders at or below the merged watermark of the newest base version that is at
     * least {@code grace} old: a reader that listed a generation as pending just before its merge committed
     * can still open it for that long. Nothing above a watermark is ever deleted.
     */
    GcResult collectGarbage(Duration grace) {
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
                String name = SealedGeneration.folderName(folder.generation(), folder.firstOffset(), folder.lastOffset());
                if (!sealedFolders.contains(name) && Long.compareUnsigned(folder.generation(), watermark) <= 0) {
                    store.delete(SealedGeneration.MEM_WAL_DIR + "/" + shard + "/" + name);
                    unsealed++;
                }
            }
        }
        long oldVersions = cleanupBaseVersions(cutoff.minus(grace));
        if (generations + unsealed + oldVersions > 0) {
            log.info("Table {}: GC deleted {} merged generations, {} stale unsealed folders and {} old base versions"
                    + " (grace {})", lance.location(), generations, unsealed, oldVersions, grace);
        }
        return new GcResult(generations, unsealed, oldVersions);
    }
}
