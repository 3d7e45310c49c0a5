package dev.rolloutingest.table;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which generations exist and which are pending, from the seal files alone.
 *
 * <p>Cost: listing one shard is one non-recursive LIST of {@code _seals/<shard>/} (on S3 one request
 * per 1,000 seals, so a healthy backlog of tens is one request); listing the shards is one more. No
 * dataset is opened and nothing is scanned. Seal contents (rows, bytes) are fetched only for the
 * generations a merge pass actually takes.
 */
final class GenerationCatalog {
    private static final Logger log = LoggerFactory.getLogger(GenerationCatalog.class);

    /** A generation known by its seal file's name. */
    record Listed(String shard, long generation, String folder, long firstOffset, long lastOffset) {
        String datasetPath() {
            return SealedGeneration.MEM_WAL_DIR + "/" + shard + "/" + folder;
        }

        String sealPath() {
            return SealedGeneration.SEALS_DIR + "/" + shard + "/" + folder + ".json";
        }
    }

    private final ObjectStore store;
    private final String tableUri;

    GenerationCatalog(ObjectStore store, String tableUri) {
        this.store = store;
        this.tableUri = tableUri;
    }

    List<String> shards() {
        List<String> shards = new ArrayList<>();
        for (ObjectStore.Entry entry : store.list(SealedGeneration.SEALS_DIR)) {
            if (entry.folder() && ShardId.isValid(entry.name())) {
                shards.add(entry.name());
            }
        }
        shards.sort(Comparator.naturalOrder());
        return shards;
    }

    /**
     * Sealed generations of a shard, ascending. Where two seals share a generation number (a fenced
     * writer sealed a different range ending at the same offset), the wider range is kept: its content is
     * a deterministic function of its offsets, so it is right for every key the narrower one holds.
     */
    List<Listed> sealed(String shard) {
        Map<Long, Listed> byGeneration = new LinkedHashMap<>();
        for (Listed listed : everySeal(shard)) {
            byGeneration.merge(listed.generation(), listed, (a, b) -> {
                log.warn("Table {} shard {} generation {} has two seals ({}, {}); reading the wider range",
                        tableUri, shard, a.generation(), a.folder(), b.folder());
                return a.firstOffset() <= b.firstOffset() ? a : b;
            });
        }
        List<Listed> sorted = new ArrayList<>(byGeneration.values());
        sorted.sort(Comparator.comparingLong(Listed::generation));
        return sorted;
    }

    /** Every seal file of a shard, unordered, duplicates of a generation number included. */
    List<Listed> everySeal(String shard) {
        List<Listed> seals = new ArrayList<>();
        for (ObjectStore.Entry entry : store.list(SealedGeneration.SEALS_DIR + "/" + shard)) {
            if (entry.folder() || !entry.name().endsWith(".json")) {
                continue;
            }
            String folder = entry.name().substring(0, entry.name().length() - ".json".length());
            SealedGeneration.FolderName name = SealedGeneration.FolderName.parse(folder);
            if (name != null) {
                seals.add(new Listed(shard, name.generation(), folder, name.firstOffset(), name.lastOffset()));
            }
        }
        return seals;
    }

    /** Sealed generations above the watermark, ascending: exactly the ones a reader must open. */
    List<Listed> pending(String shard, long watermark) {
        return sealed(shard).stream().filter(g -> Long.compareUnsigned(g.generation(), watermark) > 0).toList();
    }

    SealedGeneration seal(Listed listed) {
        byte[] json = store.get(listed.sealPath());
        if (json == null) {
            throw new RolloutTableException.GenerationUnreadable(tableUri, listed.shard(), listed.generation(),
                    listed.folder(), null);
        }
        try {
            return SealedGeneration.fromJson(json);
        } catch (IOException | RuntimeException e) {
            throw new RolloutTableException.GenerationUnreadable(tableUri, listed.shard(), listed.generation(),
                    listed.folder(), e);
        }
    }

    /** Dataset folders of a shard by name, sealed or not (for replay checks and GC). */
    List<SealedGeneration.FolderName> datasetFolders(String shard) {
        List<SealedGeneration.FolderName> folders = new ArrayList<>();
        for (ObjectStore.Entry entry : store.list(SealedGeneration.MEM_WAL_DIR + "/" + shard)) {
            SealedGeneration.FolderName name = entry.folder() ? SealedGeneration.FolderName.parse(entry.name()) : null;
            if (name != null) {
                folders.add(name);
            }
        }
        return folders;
    }
}
