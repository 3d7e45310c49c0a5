package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.ShardId;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which partition of a topic a shard is: shard ids are hashes of topic and partition, so the partitions are hashed in
 * turn (up to {@link #MAX_PARTITIONS}) until the shard is found, and the answers kept per topic.
 */
final class ShardPartitions {
    /** How many partitions of a topic are tried (as snapshots do). */
    static final int MAX_PARTITIONS = 10_000;

    private final Map<String, Map<String, Integer>> byTopic = new ConcurrentHashMap<>();

    /** The shard's partition of {@code topic}, or -1 when it is no shard of that topic. */
    int partition(String topic, String shard) {
        Map<String, Integer> known = byTopic.computeIfAbsent(topic, t -> new HashMap<>());
        synchronized (known) {
            Integer partition = known.get(shard);
            if (partition != null) {
                return partition;
            }
            int next = (int) known.values().stream().filter(p -> p >= 0).count();
            for (int p = next; p < MAX_PARTITIONS; p++) {
                String id = ShardId.of(topic, p);
                known.put(id, p);
                if (id.equals(shard)) {
                    return p;
                }
            }
            known.put(shard, -1);
            return -1;
        }
    }
}
