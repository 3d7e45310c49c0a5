package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.PendingShard;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task of the merge-worker, the Kafka side of merging: the table shards whose GenerationSealed events Kafka
 * assigns to its partition are its own ({@link OwnedShards}, with what their events announced). An event is a wake-up;
 * the backlog is the table's (its seals and watermarks), so a missed, late or replayed event can neither strand a
 * generation nor merge one twice. The task decides when a shard is merged (count trigger, time trigger, cooldowns),
 * asks the table for the pass ({@link ShardMerges}), and applies finished passes on its own thread ({@link
 * PassOutcomes}: GenerationsMerged events, cooldowns, the merged lag of {@link MergedPositions}).
 *
 * <p>Beside it, on the same thread: the reconcile ({@link ShardReconcile}: RECONCILE announcements, shards no event
 * brought to any task) and the task's share of the tables' upkeep ({@link TableUpkeep}).
 */
final class MergeScheduler implements Processor<String, GenerationSealed, String, GenerationsMerged> {
    private static final Logger log = LoggerFactory.getLogger(MergeScheduler.class);
    static final String MERGE = "merge";

    private final MergeConfig config;
    private final MergeTables tables;
    private final TableMaintenanceRunner maintenance;
    private final CooldownPolicy policy;
    private final MergeMetrics metrics;
    private final int eventPartitions;
    private final MergedPositions positions;

    private OwnedShards shards;
    private CooldownBook cooldowns;
    private PassOutcomes outcomes;
    private ShardReconcile reconcile;
    private TableUpkeep upkeep;
    private TaskPartition taskPartition;
    private int partition;

    MergeScheduler(
            MergeConfig config,
            MergeTables tables,
            TableMaintenanceRunner maintenance,
            MergeMetrics metrics,
            int eventPartitions,
            ObjLongConsumer<TopicPartition> mergedPositions) {
        this.maintenance = maintenance;
        this.positions = new MergedPositions(mergedPositions);
        this.config = config;
        this.tables = tables;
        this.policy = CooldownPolicy.from(config);
        this.metrics = metrics;
        this.eventPartitions = eventPartitions;
    }

    @Override
    public void init(ProcessorContext<String, GenerationsMerged> context) {
        this.shards = new OwnedShards(MergeStores.shards(context));
        this.cooldowns = new CooldownBook(MergeStores.cooldowns(context), policy, metrics);
        this.partition = context.taskId().partition();
        this.taskPartition = new TaskPartition(partition, eventPartitions);
        this.outcomes = new PassOutcomes(context, tables, cooldowns, metrics, positions);
        this.reconcile = new ShardReconcile(tables, shards, outcomes, positions, taskPartition);
        this.upkeep = new TableUpkeep(config, tables, maintenance, cooldowns, taskPartition);
        context.schedule(Duration.ofMillis(config.checkIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::tick);
        context.schedule(
                Duration.ofMillis(config.reconcileIntervalMs()), PunctuationType.WALL_CLOCK_TIME, reconcile::run);
        upkeep.schedule(context);
    }

    @Override
    public void process(Record<String, GenerationSealed> record) {
        GenerationSealed event = record.value();
        if (event == null || !ShardId.isValid(event.getShardId())) {
            log.warn("Ignoring a GenerationSealed event without a valid shard id: {}", event);
            return;
        }
        String shard = event.getShardId();
        Optional<String> table = tables.nameOf(event.getTableUri());
        if (table.isEmpty()) {
            log.warn(
                    "Ignoring a GenerationSealed event of table {}, which is not one this merge-worker serves ({})",
                    event.getTableUri(),
                    tables.catalog().uri());
            return;
        }
        String key = tables.key(table.get(), shard);
        // Kafka's partitioner brought the event here by its key: the shard is this task's. An event keyed otherwise
        // (by the shard alone, as before tables had keys of their own) is this task's only where its key's would be.
        if (!key.equals(record.key()) && !taskPartition.owns(key)) {
            log.debug("Generation {} of {} belongs to another task; left to its owner", event.getGeneration(), key);
            return;
        }
        positions.learn(shard, new TopicPartition(event.getTopic(), event.getPartition()));
        shards.own(key);
        long now = System.currentTimeMillis();
        tables.of(table.get()).ifPresent(merging -> {
            PendingShard pending = pendingOf(merging, shard);
            if (pending != null) {
                maybeTrigger(key, shard, merging, pending, now, cooldowns.gates(MERGE, key, now));
            }
        });
    }

    /** The table's backlog of one shard; null when the table cannot be read now (the next tick tries again). */
    static PendingShard pendingOf(MergeTables.Merging merging, String shard) {
        try {
            return merging.table().generations().backlog().get(shard);
        } catch (RuntimeException e) {
            log.debug("Table {}: backlog unreadable now: {}", merging.table().location(), e.getMessage());
            return null;
        }
    }

    /** The table's backlog, every shard; empty when it cannot be read now. */
    private static Map<String, PendingShard> backlogOf(MergeTables.Merging merging) {
        try {
            return merging.table().generations().backlog();
        } catch (RuntimeException e) {
            log.debug("Table {}: backlog unreadable now: {}", merging.table().location(), e.getMessage());
            return Map.of();
        }
    }

    private void tick(long now) {
        reconcile.once(now);
        long total = 0;
        Map<String, MergeMetrics.TableBacklog> byTable = new HashMap<>();
        Map<String, List<String>> keysByTable = new TreeMap<>();
        shards.forEachKey(key -> keysByTable
                .computeIfAbsent(tables.parse(key).table(), t -> new ArrayList<>())
                .add(key));
        for (Map.Entry<String, List<String>> tableKeys : keysByTable.entrySet()) {
            Optional<MergeTables.Merging> merging = tables.of(tableKeys.getKey());
            if (merging.isEmpty()) {
                continue;
            }
            Map<String, PendingShard> backlog = backlogOf(merging.get());
            for (String key : tableKeys.getValue()) {
                String shard = tables.parse(key).shard();
                // Read before the drain: a pass no longer running has queued its outcome, so it is applied below.
                boolean passing = tables.passes().running(key);
                List<ShardMerges.Outcome> finished = tables.passes().drain(key);
                OwnedShard owned = shards.get(key);
                long announced = owned.announcedUpTo();
                for (ShardMerges.Outcome outcome : finished) {
                    outcomes.apply(merging.get(), outcome, owned, now);
                }
                if (!finished.isEmpty()) {
                    backlog = backlogOf(merging.get()); // the passes moved it: the table was told
                }
                PendingShard pending = backlog.get(shard);
                if (pending != null && !passing) {
                    // A watermark past the events: a pass of another process (a snapshot's fold), or one whose worker
                    // died before its event.
                    outcomes.announceCovered(merging.get(), shard, owned, pending.watermark());
                }
                if (owned.announcedUpTo() != announced) {
                    shards.put(key, owned); // only what changed reaches the changelog
                }
                boolean cooling = cooldowns.gates(MERGE, key, now); // read once: the trigger and the gauge
                if (pending == null) {
                    continue;
                }
                maybeTrigger(key, shard, merging.get(), pending, now, cooling);
                total += pending.count();
                byTable.merge(
                        tableKeys.getKey(),
                        MergeMetrics.TableBacklog.ofShard(pending.count(), cooling),
                        MergeMetrics.TableBacklog::plus);
            }
        }
        metrics.backlog(partition, total);
        metrics.tableBacklog(partition, byTable);
        upkeep.applyOutcomes(now);
        cooldowns.expire(now);
    }

    /** Asks for the shard's merge when its count or age trigger is due, unless it runs or cools down. */
    private void maybeTrigger(
            String key, String shard, MergeTables.Merging merging, PendingShard backlog, long now, boolean cooling) {
        if (backlog.count() == 0 || tables.passes().running(key)) {
            return;
        }
        MergeTrigger trigger = null;
        if (config.afterGenerations() > 0 && backlog.count() >= config.afterGenerations()) {
            trigger = MergeTrigger.COUNT;
        } else if (config.maxPendingAgeMs() > 0 && backlog.oldestAgeMs(now) >= config.maxPendingAgeMs()) {
            trigger = MergeTrigger.TIME;
        }
        if (trigger == null) {
            return;
        }
        if (cooling) {
            metrics.skippedCoolingDown();
            return;
        }
        tables.passes().submit(key, merging.table(), shard, trigger);
    }

    /**
     * The task is closed or its partition revoked: it lets go of its shards, waiting for a round that holds one before
     * the partition's next owner can start committing them.
     */
    @Override
    public void close() {
        Set<String> owned = shards.keys();
        tables.passes()
                .release(tables.active(), (table, shard) -> owned.contains(tables.key(table, shard)), RELEASE_WAIT);
        metrics.taskClosed(partition);
    }

    /** How long a closing task waits for a round that holds its shards (a commit takes seconds at most). */
    static final Duration RELEASE_WAIT = Duration.ofSeconds(60);
}
