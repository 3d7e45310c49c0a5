package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.rows.DroppedDeletes;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.lance.Dataset;

/**
 * The offsets a {@link TailCursor} counts, per partition of one topic: what a snapshot or a base version holds (its
 * head, where a scan's cursor stands), what the base of a snapshot holds, and the window a tail reads after a cursor.
 * Refuses the cursors and tables a tail cannot answer exactly.
 */
final class CursorOffsets {
    private final LanceIo lance;
    private final ObjectStore store;
    private final ShardPartitions partitions;

    CursorOffsets(LanceIo lance, ObjectStore store, ShardPartitions partitions) {
        this.lance = lance;
        this.store = store;
        this.partitions = partitions;
    }

    /** Per partition of the topic, the last offset the snapshot holds (sealed), merged or pending. */
    Map<Integer, Long> head(ReadCatalog.Snapshot snapshot, String topic) {
        Map<Integer, Long> head = new TreeMap<>();
        snapshot.watermarks.forEach((shard, watermark) -> {
            int partition = partitions.partition(topic, shard);
            if (partition >= 0 && watermark > 0) {
                head.merge(partition, watermark - 1, Math::max);
            }
        });
        snapshot.pendingByShard.forEach((shard, pending) -> {
            int partition = partitions.partition(topic, shard);
            if (partition >= 0 && !pending.isEmpty()) {
                head.merge(partition, pending.get(pending.size() - 1).listed().lastOffset(), Math::max);
            }
        });
        return head;
    }

    /** Per partition of the topic, the last offset one base version holds (its merged watermark - 1). */
    Map<Integer, Long> head(Dataset version, String topic) {
        Map<Integer, Long> head = new TreeMap<>();
        MemWalWatermarks.read(version).forEach((shard, watermark) -> {
            int partition = partitions.partition(topic, shard);
            if (partition >= 0 && watermark > 0) {
                head.put(partition, watermark - 1);
            }
        });
        return head;
    }

    /** Per partition, the last offset the base holds (merged watermark - 1), at most {@code upTo}'s. */
    Map<Integer, Long> merged(ReadCatalog.Snapshot snapshot, String topic, Map<Integer, Long> upTo) {
        Map<Integer, Long> merged = new TreeMap<>();
        snapshot.watermarks.forEach((shard, watermark) -> {
            int partition = partitions.partition(topic, shard);
            if (partition >= 0 && watermark > 0 && upTo.containsKey(partition)) {
                merged.put(partition, Math.min(watermark - 1, upTo.get(partition)));
            }
        });
        return merged;
    }

    /**
     * What one tail reads: per partition the offsets up to the head, at most {@code span} past the cursor; {@code more}
     * when some partition has offsets beyond that.
     */
    record Window(Map<Integer, Long> upTo, boolean more) {
        /** The cursor once the window is read: the window's ends, and the cursor's offsets of other partitions. */
        TailCursor cursorAfter(TailCursor from, String topic) {
            Map<Integer, Long> next = new TreeMap<>(from.offsets());
            next.putAll(upTo);
            return new TailCursor(from.table(), topic, next);
        }
    }

    static Window window(TailCursor from, Map<Integer, Long> head, long span) {
        Map<Integer, Long> upTo = new TreeMap<>();
        boolean more = false;
        for (Map.Entry<Integer, Long> partition : head.entrySet()) {
            long after = from.offset(partition.getKey());
            long end = Math.min(partition.getValue(), after > Long.MAX_VALUE - span ? Long.MAX_VALUE : after + span);
            more |= end < partition.getValue();
            upTo.put(partition.getKey(), Math.max(after, end));
        }
        return new Window(upTo, more);
    }

    /** The base rows of (cursor, upTo] per partition, as a filter; null when no partition has any. */
    static String range(TailCursor from, Map<Integer, Long> upTo) {
        List<String> terms = new ArrayList<>();
        upTo.forEach((partition, end) -> {
            long after = from.offset(partition);
            if (end > after) {
                terms.add(
                        "(" + RolloutSchema.SOURCE_PARTITION + " = " + partition + " AND " + RolloutSchema.SOURCE_OFFSET
                                + " > " + after + " AND " + RolloutSchema.SOURCE_OFFSET + " <= " + end + ")");
            }
        });
        return terms.isEmpty() ? null : "(" + String.join(" OR ", terms) + ")";
    }

    /**
     * A tail counts offsets of one topic's partitions, and a row keeps its partition, not its topic: a table that also
     * holds rows of another topic (many topics routed to it) would mix that topic's rows into the ranges. Refused,
     * never answered wrong.
     */
    void requireOneTopic(ReadCatalog.Snapshot snapshot, String topic) {
        Set<String> shards = new TreeSet<>(snapshot.watermarks.keySet());
        shards.addAll(snapshot.pendingByShard.keySet());
        for (String shard : shards) {
            if (partitions.partition(topic, shard) < 0) {
                throw new IllegalArgumentException("table " + lance.location().uri()
                        + " holds rows of a topic other than '"
                        + topic + "' (shard " + shard + "): a tail counts offsets of one topic, so it tails tables fed"
                        + " by one topic only; scan this table instead");
            }
        }
    }

    /** A cursor the table cannot answer exactly: deletes after it were dropped, or it is ahead of the table. */
    void refuseStale(TailCursor from, Map<Integer, Long> head) {
        for (Map.Entry<Integer, Long> partition : from.offsets().entrySet()) {
            long known = head.getOrDefault(partition.getKey(), -1L);
            if (partition.getValue() > known) {
                throw new RolloutTableException.StaleCursor(
                        lance.location().uri(),
                        "it is at offset " + partition.getValue() + " of partition " + partition.getKey()
                                + ", the table holds up to " + known + ": the table was recreated or restored");
            }
        }
        // read after the snapshot: a drop that the snapshot's base already shows wrote its mark before
        Map<Integer, Long> dropped = DroppedDeletes.read(store);
        for (Map.Entry<Integer, Long> partition : dropped.entrySet()) {
            if (from.offset(partition.getKey()) < partition.getValue()) {
                throw new RolloutTableException.StaleCursor(
                        lance.location().uri(),
                        "deletes up to offset " + partition.getValue() + " of partition " + partition.getKey()
                                + " were dropped after " + "rollout.delete.retention.ms"
                                + ", and the cursor is at " + from.offset(partition.getKey()));
            }
        }
    }
}
