package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task of the merge-worker: the shards whose GenerationSealed events land in its partition. It keeps
 * their pending generations and the cooldowns in changelogged stores, decides when a shard is merged
 * (count trigger, time trigger), hands passes to the {@link MergeCoordinator}, and applies finished
 * passes on its own thread: stores, GenerationsMerged events, cooldowns. It reconciles with the table
 * (watermarks and seals) at start and periodically, so a missed or replayed event can neither strand a
 * generation nor merge one twice (the pass itself re-reads the watermark).
 *
 * <p>Over 300 lines because the events task's state (backlogs, triggers, outcomes, maintenance gates) moves in one
 * Kafka Streams processor; the cooldowns are kept by {@link CooldownBook}.
 */
final class MergeScheduler implements Processor<String, GenerationSealed, String, GenerationsMerged> {
    private static final Logger log = LoggerFactory.getLogger(MergeScheduler.class);
    static final String MERGE = "merge";

    private final MergeConfig config;
    private final MergeCoordinator coordinator;
    private final RolloutTable table;
    private final TableMaintenanceRunner maintenance;
    private final CooldownPolicy policy;
    private final MergeMetrics metrics;
    private final int eventPartitions;
    private final ObjLongConsumer<TopicPartition> mergedPositions;
    /** Which input partition a shard is, from its events and seals (a shard id is a hash of it). */
    private final Map<String, TopicPartition> partitionOf = new HashMap<>();

    private ProcessorContext<String, GenerationsMerged> context;
    private KeyValueStore<String, ShardBacklog> backlogs;
    private CooldownBook cooldowns;
    private int partition;
    private boolean reconciled;

    MergeScheduler(
            MergeConfig config,
            RolloutTable table,
            MergeCoordinator coordinator,
            TableMaintenanceRunner maintenance,
            MergeMetrics metrics,
            int eventPartitions,
            ObjLongConsumer<TopicPartition> mergedPositions) {
        this.maintenance = maintenance;
        this.mergedPositions = mergedPositions;
        this.config = config;
        this.coordinator = coordinator;
        this.table = table;
        this.policy = CooldownPolicy.from(config);
        this.metrics = metrics;
        this.eventPartitions = eventPartitions;
    }

    @Override
    public void init(ProcessorContext<String, GenerationsMerged> context) {
        this.context = context;
        this.backlogs = MergeStores.backlogs(context);
        this.cooldowns = new CooldownBook(MergeStores.cooldowns(context), policy, metrics);
        this.partition = context.taskId().partition();
        context.schedule(Duration.ofMillis(config.checkIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::tick);
        context.schedule(
                Duration.ofMillis(config.reconcileIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::reconcile);
        if (partition == 0) {
            // Compaction, index upkeep and GC are table-wide: only the task of partition 0 schedules them.
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
    }

    @Override
    public void process(Record<String, GenerationSealed> record) {
        GenerationSealed event = record.value();
        if (event == null || !ShardId.isValid(event.getShardId())) {
            log.warn("Ignoring a GenerationSealed event without a valid shard id: {}", event);
            return;
        }
        String shard = event.getShardId();
        partitionOf.put(shard, new TopicPartition(event.getTopic(), event.getPartition()));
        ShardBacklog backlog = backlog(shard);
        if (event.getGeneration() <= backlog.announcedUpTo()) {
            return; // merged and announced already (its event was late, the table told us first)
        }
        backlog.add(event.getGeneration(), event.getSealedAt().toEpochMilli());
        put(shard, backlog);
        maybeTrigger(shard, backlog, System.currentTimeMillis());
    }

    private void tick(long now) {
        if (!reconciled) {
            reconcile(now);
        }
        long total = 0;
        List<String> shards = new ArrayList<>();
        try (KeyValueIterator<String, ShardBacklog> all = backlogs.all()) {
            all.forEachRemaining(kv -> shards.add(kv.key));
        }
        for (String shard : shards) {
            ShardBacklog backlog = backlog(shard);
            List<MergeCoordinator.Outcome> outcomes = coordinator.drain(shard);
            for (MergeCoordinator.Outcome outcome : outcomes) {
                apply(outcome, backlog, now);
            }
            if (!outcomes.isEmpty()) {
                put(shard, backlog); // only what changed reaches the changelog
            }
            maybeTrigger(shard, backlog, now);
            total += backlog.count();
        }
        metrics.backlog(partition, total);
        if (partition == 0) {
            for (TableMaintenanceRunner.Outcome outcome : maintenance.drain()) {
                String target = table.location().uri();
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
                    cooldowns.recordFailure(outcome.kind(), target, outcome.error(), now);
                }
            }
        }
        cooldowns.expire(now);
    }

    private void maybeTrigger(String shard, ShardBacklog backlog, long now) {
        if (backlog.count() == 0 || coordinator.running(shard)) {
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
        if (cooldowns.gates(MERGE, shard, now)) {
            metrics.skippedCoolingDown();
            return;
        }
        coordinator.submit(shard, trigger);
    }

    private void apply(MergeCoordinator.Outcome outcome, ShardBacklog backlog, long now) {
        String shard = outcome.shard();
        if (outcome.failed() && outcome.tableUnavailable()) {
            // The store, not the shard: no cooldown (every shard would enter one); the next trigger retries.
            log.info(
                    "merge of {} waits for the table to be available again: {}",
                    shard,
                    outcome.error().getMessage());
            return;
        }
        if (outcome.failed()) {
            cooldowns.recordFailure(MERGE, shard, outcome.error(), now);
            return;
        }
        cooldowns.clear(MERGE, shard);
        MergeResult result = outcome.result();
        // What an earlier pass merged but never announced (it died before its commit), then this pass.
        announceCovered(shard, backlog, result.previousWatermark());
        if (result.mergedAnything()) {
            emit(
                    shard,
                    backlog,
                    result.mergedGenerations(),
                    result.newWatermark(),
                    result.rows(),
                    outcome.duration().toMillis(),
                    outcome.trigger());
        }
        backlog.mergedUpTo(result.newWatermark());
        publishMerged(shard, result.newWatermark());
    }

    /** The merged lag: a watermark is the first offset of its partition not yet in the base table. */
    private void publishMerged(String shard, long watermark) {
        TopicPartition tp = partitionOf.get(shard);
        if (tp != null && watermark > 0) {
            mergedPositions.accept(tp, watermark);
        }
    }

    /**
     * Announces, as RECONCILE, generations the watermark covers that no committed event announced: a pass
     * committed them but its worker died before its event. Their sealed events may not have been re-read yet
     * (the backlog does not know them), so the table's listing names them too.
     */
    private void announceCovered(String shard, ShardBacklog backlog, long watermark) {
        if (Long.compareUnsigned(watermark, backlog.announcedUpTo()) > 0) {
            TreeSet<Long> covered = new TreeSet<>(backlog.unannouncedUpTo(watermark));
            try {
                covered.addAll(table.sealedGenerationsBetween(shard, backlog.announcedUpTo(), watermark));
            } catch (RuntimeException e) {
                log.warn(
                        "Table {} shard {}: cannot list the generations up to watermark {} to announce them: {}",
                        table.location(),
                        shard,
                        watermark,
                        e.getMessage());
            }
            if (!covered.isEmpty()) {
                emit(shard, backlog, List.copyOf(covered), watermark, 0, 0, MergeTrigger.RECONCILE);
            }
        }
        backlog.mergedUpTo(watermark);
    }

    private void emit(
            String shard,
            ShardBacklog backlog,
            List<Long> generations,
            long watermark,
            long rows,
            long durationMs,
            MergeTrigger trigger) {
        backlog.announced(watermark);
        GenerationsMerged event = GenerationsMerged.newBuilder()
                .setShardId(shard)
                .setTableUri(table.location().uri())
                .setMergedGenerations(generations)
                .setNewWatermark(watermark)
                .setRows(rows)
                .setDurationMs(durationMs)
                .setTrigger(trigger)
                .setMergedAt(Instant.now())
                .build();
        context.forward(new Record<>(shard, event, System.currentTimeMillis()));
    }

    /**
     * Makes each owned shard's backlog equal to the table's view: drops what the watermark covers (a pass
     * committed before a crash lost its event: announced now as RECONCILE) and adds sealed generations no
     * event announced. Shards never seen in an event are owned by the task their key partitions to.
     */
    private void reconcile(long now) {
        reconciled = true;
        Map<String, Long> watermarks;
        List<String> tableShards;
        try {
            watermarks = table.watermarks();
            tableShards = table.shards();
        } catch (Exception e) {
            log.warn("Table {}: reconcile skipped, the table is unreadable: {}", table.location(), e.getMessage());
            return;
        }
        Set<String> owned = new TreeSet<>();
        try (KeyValueIterator<String, ShardBacklog> all = backlogs.all()) {
            all.forEachRemaining(kv -> owned.add(kv.key));
        }
        for (String shard : tableShards) {
            if (ownedByThisTask(shard)) {
                owned.add(shard);
            }
        }
        for (String shard : owned) {
            if (coordinator.running(shard)) {
                continue; // its outcome is applied at the next tick
            }
            long watermark = watermarks.getOrDefault(shard, 0L);
            ShardBacklog backlog = backlog(shard);
            // Finished passes first: their own events announce what they merged, not RECONCILE.
            for (MergeCoordinator.Outcome outcome : coordinator.drain(shard)) {
                apply(outcome, backlog, now);
            }
            announceCovered(shard, backlog, watermark);
            publishMerged(shard, watermark);
            try {
                for (SealedGeneration sealed : table.pendingGenerations(shard)) {
                    partitionOf.putIfAbsent(shard, new TopicPartition(sealed.topic(), sealed.partition()));
                    if (!backlog.pending().containsKey(sealed.generation())
                            && sealed.generation() > backlog.announcedUpTo()) {
                        backlog.add(sealed.generation(), sealed.sealedAt().toEpochMilli());
                    }
                }
            } catch (Exception e) {
                log.warn(
                        "Table {} shard {}: reconcile could not list pending generations: {}",
                        table.location(),
                        shard,
                        e.getMessage());
            }
            put(shard, backlog);
        }
    }

    private boolean ownedByThisTask(String shard) {
        // The default partitioner of a keyed record: murmur2 of the key bytes.
        return Utils.toPositive(Utils.murmur2(shard.getBytes(StandardCharsets.UTF_8))) % eventPartitions == partition;
    }

    private void maintain(String kind, long now) {
        String target = table.location().uri();
        if (cooldowns.gates(kind, target, now)) {
            return;
        }
        maintenance.submit(kind, () -> switch (kind) {
            case "compact" -> table.compact(config.compactionTargetRows()).toString();
            case "index" -> table.optimizeKeyIndex(config.keyIndexTiers()).toString();
            case "deletes" -> table.dropDeletes(config.deleteRetention()).toString();
            default -> table.collectGarbage(config.gcGrace()).toString();
        });
    }

    private ShardBacklog backlog(String shard) {
        ShardBacklog backlog = backlogs.get(shard);
        return backlog == null ? ShardBacklog.empty() : backlog;
    }

    private void put(String shard, ShardBacklog backlog) {
        backlogs.put(shard, backlog);
    }

    /**
     * The task is closed or its partition revoked: the coordinator lets go of this task's shards, finishing a round
     * that holds one before the partition's next owner can start committing them.
     */
    @Override
    public void close() {
        coordinator.release(this::ownedByThisTask, RELEASE_WAIT);
        metrics.taskClosed(partition);
    }

    /** How long a closing task waits for a round that holds its shards (a commit takes seconds at most). */
    static final Duration RELEASE_WAIT = Duration.ofSeconds(60);
}
