package dev.rolloutingest.table.maintenance;

import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.BaseDeletes;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.StorageErrors;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Garbage collection: merged generations' folders, stale unsealed ones, and old base versions. */
final class GarbageCollection {
    private static final Logger log = LoggerFactory.getLogger(GarbageCollection.class);

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;

    GarbageCollection(LanceIo lance, ObjectStore store, GenerationCatalog catalog) {
        this.lance = lance;
        this.store = store;
        this.catalog = catalog;
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
            return removed.getOldVersions() + cleanupDeletesVersions(before);
        } catch (Exception e) { // lance-core throws its store errors as undeclared IOExceptions too
            throw StorageErrors.classify(lance.location().uri(), "cleaning up old versions", e);
        }
    }

    /** The same for the deletes kept beside the base: each merge with deletes and each drop commits a version. */
    private long cleanupDeletesVersions(Instant before) throws Exception {
        try (Dataset deletes = BaseDeletes.open(lance)) {
            if (deletes == null) {
                return 0;
            }
            return deletes.cleanupWithPolicy(CleanupPolicy.builder()
                            .withBeforeTimestampMillis(before.toEpochMilli())
                            .build())
                    .getOldVersions();
        }
    }

    /**
     * Deletes generation folders at or below the merged watermark of the newest base version that is at
     * least {@code grace} old: a reader that listed a generation as pending just before its merge committed
     * can still open it for that long. Nothing above a watermark is ever deleted.
     */
    TableMaintenance.GcResult collect(Duration grace) {
        Instant cutoff = Instant.now().minus(grace);
        Map<String, Long> watermarks;
        try (Dataset base = lance.openBase()) {
            Optional<Version> settled = base.listVersions().stream()
                    .filter(v -> !v.getDataTime().toInstant().isAfter(cutoff))
                    .max(Comparator.comparingLong(Version::getId));
            if (settled.isEmpty()) {
                return new TableMaintenance.GcResult(0, 0, 0);
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
        return new TableMaintenance.GcResult(generations, unsealed, oldVersions);
    }
}
