package dev.rolloutingest.table;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.lance.Dataset;
import org.lance.Version;
import org.lance.cleanup.CleanupPolicy;
import org.lance.cleanup.RemovalStats;
import org.lance.compaction.CompactionOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Base-table compaction and garbage collection of merged generations. */
public final class TableMaintenance {
    private static final Logger log = LoggerFactory.getLogger(TableMaintenance.class);

    /** Fragments of the base table before and after a compaction. */
    public record CompactionResult(int fragmentsBefore, int fragmentsAfter) {}

    /** Generations whose folders were deleted, and folders left because they are not yet old enough. */
    public record GcResult(int deletedGenerations, int deletedUnsealedFolders, long oldBaseVersionsRemoved) {}

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;

    TableMaintenance(LanceIo lance, ObjectStore store, GenerationCatalog catalog) {
        this.lance = lance;
        this.store = store;
        this.catalog = catalog;
    }

    /**
     * Compacts the base table. lance-core 7.0.0 aborts the JVM ("An index existed with no fields") when
     * compacting a table with MemWAL initialised unless the index remap is deferred, so it always is.
     */
    CompactionResult compact(long targetRowsPerFragment) {
        try (Dataset base = lance.openBase()) {
            int before = base.getFragments().size();
            base.compact(compactionOptions(targetRowsPerFragment));
            try (Dataset after = lance.openBase()) {
                int fragments = after.getFragments().size();
                log.info("Table {}: compacted {} fragments into {}", lance.location(), before, fragments);
                return new CompactionResult(before, fragments);
            }
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
