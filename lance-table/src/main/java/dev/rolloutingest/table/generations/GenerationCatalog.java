package dev.rolloutingest.table.generations;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.storage.ObjectStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which generations exist and which are pending, from the seal files alone.
 *
 * <p>Cost: listing one shard is one non-recursive LIST of {@code _seals/<shard>/} (on S3 one request
 * per 1,000 seals, so a healthy backlog of tens is one request). A read needs every shard: that is one
 * recursive LIST of {@code _seals/} for all shards together (one request per 1,000 seals in the whole
 * table, merged ones included until GC removes them), not one per shard. No dataset is opened and
 * nothing is scanned. Seal contents (rows, bytes) are fetched only for the generations a merge pass takes.
 */
public final class GenerationCatalog {
    private static final Logger log = LoggerFactory.getLogger(GenerationCatalog.class);

    /** A generation known by its seal file's name. */
    public record Listed(String shard, long generation, String folder, long firstOffset, long lastOffset) {
        public String datasetPath() {
            return SealedGeneration.MEM_WAL_DIR + "/" + shard + "/" + folder;
        }

        public String sealPath() {
            return SealedGeneration.SEALS_DIR + "/" + shard + "/" + folder + ".json";
        }
    }

    private final ObjectStore store;
    private final String tableUri;

    public GenerationCatalog(ObjectStore store, String tableUri) {
        this.store = store;
        this.tableUri = tableUri;
    }

    public List<String> shards() {
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
    public List<Listed> sealed(String shard) {
        return widestPerGeneration(shard, everySeal(shard));
    }

    private List<Listed> widestPerGeneration(String shard, List<Listed> seals) {
        Map<Long, Listed> byGeneration = new LinkedHashMap<>();
        for (Listed listed : seals) {
            byGeneration.merge(listed.generation(), listed, (a, b) -> {
                log.warn(
                        "Table {} shard {} generation {} has two seals ({}, {}); reading the wider range",
                        tableUri,
                        shard,
                        a.generation(),
                        a.folder(),
                        b.folder());
                return a.firstOffset() <= b.firstOffset() ? a : b;
            });
        }
        List<Listed> sorted = new ArrayList<>(byGeneration.values());
        sorted.sort(Comparator.comparingLong(Listed::generation));
        return sorted;
    }

    /** Every seal file of a shard, unordered, duplicates of a generation number included. */
    public List<Listed> everySeal(String shard) {
        List<Listed> seals = new ArrayList<>();
        for (ObjectStore.Entry entry : store.list(SealedGeneration.SEALS_DIR + "/" + shard)) {
            Listed listed = entry.folder() ? null : parse(shard, entry.name());
            if (listed != null) {
                seals.add(listed);
            }
        }
        return seals;
    }

    /** Sealed generations of every shard from one recursive listing, each shard's ascending. */
    public Map<String, List<Listed>> sealedByShard() {
        Map<String, List<Listed>> everyShard = new TreeMap<>();
        for (String path : store.listRecursive(SealedGeneration.SEALS_DIR)) {
            int slash = path.indexOf('/');
            if (slash < 0 || !ShardId.isValid(path.substring(0, slash))) {
                continue;
            }
            String shard = path.substring(0, slash);
            Listed listed = parse(shard, path.substring(slash + 1));
            if (listed != null) {
                everyShard.computeIfAbsent(shard, s -> new ArrayList<>()).add(listed);
            }
        }
        Map<String, List<Listed>> deduplicated = new TreeMap<>();
        everyShard.forEach((shard, seals) -> deduplicated.put(shard, widestPerGeneration(shard, seals)));
        return deduplicated;
    }

    /** The seal a file of {@code _seals/<shard>/} names, or null when the name is not a seal's. */
    public static Listed parse(String shard, String fileName) {
        if (!fileName.endsWith(".json") || fileName.contains("/")) {
            return null;
        }
        String folder = fileName.substring(0, fileName.length() - ".json".length());
        SealedGeneration.FolderName name = SealedGeneration.FolderName.parse(folder);
        return name == null
                ? null
                : new Listed(shard, name.generation(), folder, name.firstOffset(), name.lastOffset());
    }

    /** Sealed generations above the watermark, ascending: exactly the ones a reader must open. */
    public List<Listed> pending(String shard, long watermark) {
        return sealed(shard).stream()
                .filter(g -> Long.compareUnsigned(g.generation(), watermark) > 0)
                .toList();
    }

    public SealedGeneration seal(Listed listed) {
        byte[] json = store.get(listed.sealPath());
        if (json == null) {
            throw new RolloutTableException.GenerationUnreadable(
                    tableUri, listed.shard(), listed.generation(), listed.folder(), null);
        }
        try {
            return SealedGeneration.fromJson(json);
        } catch (IOException | RuntimeException e) {
            throw new RolloutTableException.GenerationUnreadable(
                    tableUri, listed.shard(), listed.generation(), listed.folder(), e);
        }
    }

    /** Dataset folders of a shard by name, sealed or not (for replay checks and GC). */
    public List<SealedGeneration.FolderName> datasetFolders(String shard) {
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
