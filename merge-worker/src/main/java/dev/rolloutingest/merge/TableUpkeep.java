package dev.rolloutingest.merge;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import java.time.Duration;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An events task's share of the tables' upkeep (compaction, key index, GC, drop of old deletes): each table's run on
 * one task, the one its name hashes to ({@link TaskPartition#owns}), so merge-worker instances share the upkeep of a
 * root's tables out as they share its merges. The runs go to the {@link TableMaintenanceRunner}; their outcomes come
 * back on the task's thread, where a table's failures count towards its cooldown.
 */
final class TableUpkeep {
    // the scheduler's logger: these lines read in order with its own, under the name operators filter on
    private static final Logger log = LoggerFactory.getLogger(MergeScheduler.class);

    private final MergeConfig config;
    private final MergeTables tables;
    private final TableMaintenanceRunner maintenance;
    private final CooldownBook cooldowns;
    private final TaskPartition partition;

    TableUpkeep(
            MergeConfig config,
            MergeTables tables,
            TableMaintenanceRunner maintenance,
            CooldownBook cooldowns,
            TaskPartition partition) {
        this.config = config;
        this.tables = tables;
        this.maintenance = maintenance;
        this.cooldowns = cooldowns;
        this.partition = partition;
    }

    /** Schedules each kind of upkeep whose interval is set. */
    void schedule(ProcessorContext<?, ?> context) {
        if (config.compactionIntervalMs() > 0) {
            context.schedule(
                    Duration.ofMillis(config.compactionIntervalMs()),
                    PunctuationType.WALL_CLOCK_TIME,
                    now -> maintain("compact", now));
        }
        if (config.indexOptimizeIntervalMs() > 0) {
            context.schedule(
                    Duration.ofMillis(config.indexOptimizeIntervalMs()),
                    PunctuationType.WALL_CLOCK_TIME,
                    now -> maintain("index", now));
        }
        if (config.gcIntervalMs() > 0) {
            context.schedule(
                    Duration.ofMillis(config.gcIntervalMs()),
                    PunctuationType.WALL_CLOCK_TIME,
                    now -> maintain("gc", now));
            context.schedule(
                    Duration.ofMillis(config.gcIntervalMs()),
                    PunctuationType.WALL_CLOCK_TIME,
                    now -> maintain("deletes", now));
        }
    }

    /** Upkeep of every table this process has merged or reconciled; each table's cooldown gates its own. */
    private void maintain(String kind, long now) {
        for (MergeTables.Merging merging : tables.active()) {
            RolloutTable table = merging.table();
            String target = table.location().uri();
            if (!partition.owns(merging.name()) || cooldowns.gates(kind, target, now)) {
                continue;
            }
            maintenance.submit(merging.name(), target, kind, () -> switch (kind) {
                case "compact" -> table.maintenance()
                        .compact(config.compactionTargetRows())
                        .toString();
                case "index" -> table.maintenance()
                        .optimizeKeyIndex(config.keyIndexTiers())
                        .toString();
                case "deletes" -> table.maintenance()
                        .dropDeletes(config.deleteRetention())
                        .toString();
                default -> table.maintenance().collectGarbage(config.gcGrace()).toString();
            });
        }
    }

    /** The finished runs of this task's tables: a success clears the table's cooldown, a failure counts towards it. */
    void applyOutcomes(long now) {
        for (TableMaintenanceRunner.Outcome outcome : maintenance.drain(o -> partition.owns(o.table()))) {
            String target = outcome.tableUri();
            if (outcome.error() == null) {
                cooldowns.clear(outcome.kind(), target);
            } else if (RolloutTableException.isStorageFailure(outcome.error())) {
                // The store is down or refusing: the next run retries; a cooldown would outlast the outage.
                log.info(
                        "{} of {} waits for the table's store: {}",
                        outcome.kind(),
                        target,
                        outcome.error().getMessage());
            } else {
                cooldowns.recordFailure(outcome.kind(), target, "table " + target, outcome.error(), now);
            }
        }
    }
}
