package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.snapshots.TableSnapshots.Cut;
import dev.rolloutingest.table.snapshots.TableSnapshots.SnapshotException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a cut asks of each shard of the table, checked against what is sealed and merged: generations merge whole, so
 * a cut inside a generation is honoured at that generation's first offset.
 *
 * @param partitions shard id to partition, for the cut topic's partitions the table holds
 * @param labels shard id to {@code topic:partition}, as the snapshot's offsets name them
 * @param targets per shard, the highest generation the snapshot may hold (-1, unsigned: any sealed now)
 */
record CutPlan(Map<String, Integer> partitions, Map<String, String> labels, Map<String, Long> targets) {
    /** How many partitions of a topic are looked for when naming shards (shard ids are hashes). */
    static final int MAX_PARTITIONS = 10_000;

    /** The plan of {@code cut} over the table whose base has merged up to {@code watermarks}. */
    static CutPlan of(GenerationCatalog catalog, Cut cut, Map<String, Long> watermarks) {
        List<String> shards = shardsOfTable(catalog, watermarks);
        Map<String, Integer> partitions = partitions(cut.topic(), shards);
        Map<String, String> labels = new HashMap<>();
        partitions.forEach((shard, p) -> labels.put(shard, cut.topic() + ":" + p));
        return new CutPlan(partitions, labels, targets(catalog, cut, labels, shards, watermarks));
    }

    /** Shard id to partition, for the topic's partitions the table holds. */
    private static Map<String, Integer> partitions(String topic, List<String> shards) {
        Map<String, Integer> partitions = new HashMap<>();
        for (int p = 0; p < MAX_PARTITIONS && partitions.size() < shards.size(); p++) {
            String shard = ShardId.of(topic, p);
            if (shards.contains(shard)) {
                partitions.put(shard, p);
            }
        }
        return partitions;
    }

    /** Shards that ever sealed (seals of merged generations go with GC) or merged. */
    private static List<String> shardsOfTable(GenerationCatalog catalog, Map<String, Long> watermarks) {
        List<String> shards = new ArrayList<>(catalog.shards());
        for (String merged : watermarks.keySet()) {
            if (!shards.contains(merged)) {
                shards.add(merged);
            }
        }
        return shards;
    }

    /** Per shard, the highest generation the snapshot may hold (-1, unsigned: any sealed now). */
    private static Map<String, Long> targets(
            GenerationCatalog catalog,
            Cut cut,
            Map<String, String> labels,
            List<String> shards,
            Map<String, Long> watermarks) {
        Map<String, Long> targets = new TreeMap<>();
        if (!cut.bounded()) {
            for (String shard : shards) {
                List<GenerationCatalog.Listed> sealed = catalog.sealed(shard);
                targets.put(
                        shard,
                        sealed.isEmpty() ? 0L : sealed.get(sealed.size() - 1).generation());
            }
            return targets;
        }
        Map<String, Integer> partitionOf = new HashMap<>();
        cut.untilOffsets().keySet().forEach(p -> partitionOf.put(ShardId.of(cut.topic(), p), p));
        List<String> unnamed = new ArrayList<>();
        for (String shard : shards) {
            if (!partitionOf.containsKey(shard)) {
                unnamed.add(labels.getOrDefault(shard, "shard " + shard));
            }
        }
        if (!unnamed.isEmpty()) {
            throw new SnapshotException(
                    SnapshotException.Kind.BAD_REQUEST,
                    "The cut must name every partition the table holds; it leaves out " + unnamed);
        }
        for (Map.Entry<Integer, Long> entry : new TreeMap<>(cut.untilOffsets()).entrySet()) {
            int partition = entry.getKey();
            long until = entry.getValue();
            String shard = ShardId.of(cut.topic(), partition);
            if (partition < 0 || until < 0) {
                throw new SnapshotException(
                        SnapshotException.Kind.BAD_REQUEST,
                        "The cut " + cut.topic() + ":" + partition + "=" + until + " is negative");
            }
            List<GenerationCatalog.Listed> sealed = catalog.sealed(shard);
            long watermark = watermarks.getOrDefault(shard, 0L);
            long sealedUpTo = Math.max(
                    watermark,
                    sealed.isEmpty() ? 0L : sealed.get(sealed.size() - 1).generation());
            if (until > sealedUpTo) {
                throw new SnapshotException(
                        SnapshotException.Kind.BAD_REQUEST,
                        "The cut " + cut.topic() + ":" + partition + "=" + until + " is beyond what is sealed: records"
                                + " below offset " + sealedUpTo + " are; wait for the next seal or cut lower");
            }
            long target = 0;
            for (GenerationCatalog.Listed g : sealed) {
                if (g.generation() <= until) {
                    target = Math.max(target, g.generation());
                }
            }
            targets.put(shard, target);
        }
        return targets;
    }
}
