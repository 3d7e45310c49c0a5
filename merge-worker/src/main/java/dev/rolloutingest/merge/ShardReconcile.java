package dev.rolloutingest.merge;

import dev.rolloutingest.table.generations.PendingShard;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What remains of the reconcile of an events task, per table: announcing what the owned shards' watermarks cover beyond
 * their events (RECONCILE), publishing their merged positions, and taking on the shards with pending generations that
 * no task owns yet (their events lost to the events topic's retention, or keyed otherwise by an older version) whose
 * key Kafka's own partitioner gives this task's partition.
 */
final class ShardReconcile {
    // the scheduler's logger: these lines read in order with its own, under the name operators filter on
    private static final Logger log = LoggerFactory.getLogger(MergeScheduler.class);

    private final MergeTables tables;
    private final OwnedShards shards;
    private final PassOutcomes outcomes;
    private final MergedPositions positions;
    private final TaskPartition partition;
    private boolean ran;

    ShardReconcile(
            MergeTables tables,
            OwnedShards shards,
            PassOutcomes outcomes,
            MergedPositions positions,
            TaskPartition partition) {
        this.tables = tables;
        this.shards = shards;
        this.outcomes = outcomes;
        this.positions = positions;
        this.partition = partition;
    }

    /** The task's first reconcile, unless one ran already. */
    void once(long now) {
        if (!ran) {
            run(now);
        }
    }

    /** Every table of the deployment, each on its own: one that cannot be opened or read waits for the next run. */
    void run(long now) {
        ran = true;
        Set<String> keys = shards.keys();
        List<String> names;
        try {
            names = tables.names();
        } catch (RuntimeException e) {
            log.warn(
                    "Tables under {}: reconcile skipped, cannot list them: {}",
                    tables.catalog().uri(),
                    e.getMessage());
            return;
        }
        for (String name : names) {
            Optional<MergeTables.Merging> merging;
            try {
                merging = tables.of(name);
            } catch (RuntimeException e) {
                log.warn("Table {}: reconcile skipped, the table cannot be opened: {}", name, e.getMessage());
                continue;
            }
            if (merging.isPresent()) {
                reconcile(merging.get(), keys, now);
            }
        }
    }

    private void reconcile(MergeTables.Merging merging, Set<String> keys, long now) {
        Map<String, PendingShard> backlog;
        try {
            backlog = merging.table().generations().backlog();
        } catch (RuntimeException e) {
            log.warn(
                    "Table {}: reconcile skipped, the table is unreadable: {}",
                    merging.table().location(),
                    e.getMessage());
            return;
        }
        for (PendingShard pending : backlog.values()) {
            String shard = pending.shard();
            String key = tables.key(merging.name(), shard);
            if (pending.topic() != null) {
                positions.learnIfUnknown(shard, new TopicPartition(pending.topic(), pending.partition()));
            }
            if (!keys.contains(key)) {
                if (pending.count() == 0 || !partition.owns(key)) {
                    continue; // nothing to merge, or another task's
                }
                log.info(
                        "Table {} shard {}: {} pending generations no event brought to any task; merged by this one"
                                + " (partition {}), where Kafka's partitioner puts its key",
                        merging.table().location(),
                        shard,
                        pending.count(),
                        partition.partition());
            }
            if (tables.passes().running(key)) {
                continue; // its outcome is applied at the next tick
            }
            OwnedShard owned = shards.get(key);
            // Finished passes first: their own events announce what they merged, not RECONCILE.
            for (ShardMerges.Outcome outcome : tables.passes().drain(key)) {
                outcomes.apply(merging, outcome, owned, now);
            }
            outcomes.announceCovered(merging, shard, owned, pending.watermark());
            positions.publish(merging.name(), shard, pending.watermark(), pending.count());
            shards.put(key, owned);
        }
    }
}
