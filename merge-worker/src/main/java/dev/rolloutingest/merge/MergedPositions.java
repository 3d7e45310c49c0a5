package dev.rolloutingest.merge;

import java.util.HashMap;
import java.util.Map;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * The merged lag of an events task's input partitions: a watermark is the first offset of its partition not yet in its
 * table's base. With many tables the partition's merged position is the lowest watermark of the tables that still wait
 * for some of its generations (or the highest watermark when none waits).
 */
final class MergedPositions {
    private final ObjLongConsumer<TopicPartition> mergedPositions;
    /** Which input partition a shard is, from its events and seals (a shard id is a hash of it). */
    private final Map<String, TopicPartition> partitionOf = new HashMap<>();
    /** Per shard, per table: its watermark and whether generations wait, for the merged position of the partition. */
    private final Map<String, Map<String, long[]>> watermarks = new HashMap<>();

    /** @param mergedPositions told, per input partition, the first offset not yet in the base table */
    MergedPositions(ObjLongConsumer<TopicPartition> mergedPositions) {
        this.mergedPositions = mergedPositions;
    }

    /** The input partition a shard's event names. */
    void learn(String shard, TopicPartition partition) {
        partitionOf.put(shard, partition);
    }

    /** The input partition a shard's seals name, unless an event named it already. */
    void learnIfUnknown(String shard, TopicPartition partition) {
        partitionOf.putIfAbsent(shard, partition);
    }

    /** A table's watermark of a shard, and its pending generations: the partition's merged position moves. */
    void publish(String table, String shard, long watermark, long pending) {
        Map<String, long[]> byTable = watermarks.computeIfAbsent(shard, s -> new HashMap<>());
        byTable.put(table, new long[] {watermark, pending});
        long waiting = Long.MAX_VALUE;
        long highest = 0;
        for (long[] w : byTable.values()) {
            highest = Math.max(highest, w[0]);
            if (w[1] > 0) {
                waiting = Math.min(waiting, w[0]);
            }
        }
        long position = waiting == Long.MAX_VALUE ? highest : waiting;
        TopicPartition tp = partitionOf.get(shard);
        if (tp != null && position > 0) {
            mergedPositions.accept(tp, position);
        }
    }
}
