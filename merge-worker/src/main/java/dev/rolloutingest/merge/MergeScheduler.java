package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.PendingShard;
import dev.rolloutingest.table.merge.MergeResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One task of the merge-worker, the Kafka side of merging: the table shards whose GenerationSealed events Kafka
 * assigns to its partition are its own (kept in a changelogged store with what their events announced). An event is a
 * wake-up; the backlog is the table's ({@link RolloutTable#backlog}: its seals and watermarks), so a missed, late or
 * replayed event can neither strand a generation nor merge one twice. The task decides when a shard is merged (count
 * trigger, time trigger, cooldowns), asks the table for the pass ({@link ShardMerges}), and applies finished passes on
 * its own thread: GenerationsMerged events, cooldowns, the merged lag.
 *
 * <p>What remains of the reconcile: announcing, as RECONCILE, generations a pass merged whose worker died before its
 * event; and taking on a shard with pending generations whose events never reached any task (lost to the events
 * topic's retention, or keyed otherwise by an older version), which goes to the task Kafka's own partitioner names for
 * its key.
 *
 * <p>Over 300 lines because the events task's state (owned shards, triggers, outcomes, maintenance gates) moves in one
 * Kafka Streams processor; the cooldowns are kept by {@link CooldownBook}.
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
    private final ObjLongConsumer<TopicPartition> mergedPositions;
    /** Which input partition a shard is, from its events and seals (a shard id is a hash of it). */
    private final Map<String, TopicPartition> partitionOf = new HashMap<>();
    /** Per shard, per table: its watermark and whether generations wait, for the merged position of the partition. */
    private final Map<String, Map<String, long[]>> watermarks = new HashMap<>();

    private ProcessorContext<String, GenerationsMerged> context;
    private KeyValueStore<String, OwnedShard> shards;
    private CooldownBook cooldowns;
    private TableUpkeep upkeep;
    private TaskPartition taskPartition;
    private int partition;
    private boolean reconciled;

    MergeScheduler(
            MergeConfig config,
            MergeTables tables,
            TableMaintenanceRunner maintenance,
            MergeMetrics metrics,
            int eventPartitions,
            ObjLongConsumer<TopicPartition> mergedPositions) {
        this.maintenance = maintenance;
        this.mergedPositions = mergedPositions;
        this.config = config;
        this.tables = tables;
        this.policy = CooldownPolicy.from(config);
        this.metrics = metrics;
        this.eventPartitions = eventPartitions;
    }

    @Override
    public void init(ProcessorContext<String, GenerationsMerged> context) {
        this.context = context;
        this.shards = MergeStores.shards(context);
        this.cooldowns = new CooldownBook(MergeStores.cooldowns(context), policy, metrics);
        this.partition = context.taskId().partition();
        this.taskPartition = new TaskPartition(partition, eventPartitions);
        this.upkeep = new TableUpkeep(config, tables, maintenance, cooldowns, taskPartition);
        context.schedule(Duration.ofMillis(config.checkIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::tick);
        context.schedule(
                Duration.ofMillis(config.reconcileIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::reconcile);
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
        partitionOf.put(shard, new TopicPartition(event.getTopic(), event.getPartition()));
        if (shards.get(key) == null) {
            shards.put(key, OwnedShard.none());
        }
        long now = System.currentTimeMillis();
        tables.of(table.get()).ifPresent(merging -> {
            PendingShard pending = pendingOf(merging, shard);
            if (pending != null) {
                maybeTrigger(key, shard, merging, pending, now, cooldowns.gates(MERGE, key, now));
            }
        });
    }

    /** The table's backlog of one shard; null when the table cannot be read now (the next tick tries again). */
    private static PendingShard pendingOf(MergeTables.Merging merging, String shard) {
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
        if (!reconciled) {
            reconcile(now);
        }
        long total = 0;
        Map<String, MergeMetrics.TableBacklog> byTable = new HashMap<>();
        Map<String, List<String>> keysByTable = new TreeMap<>();
        try (KeyValueIterator<String, OwnedShard> all = shards.all()) {
            all.forEachRemaining(kv -> keysByTable
                    .computeIfAbsent(tables.parse(kv.key).table(), t -> new ArrayList<>())
                    .add(kv.key));
        }
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
                List<ShardMerges.Outcome> outcomes = tables.passes().drain(key);
                OwnedShard owned = owned(key);
                long announced = owned.announcedUpTo();
                for (ShardMerges.Outcome outcome : outcomes) {
                    apply(merging.get(), outcome, owned, now);
                }
                if (!outcomes.isEmpty()) {
                    backlog = backlogOf(merging.get()); // the passes moved it: the table was told
                }
                PendingShard pending = backlog.get(shard);
                if (pending != null && !passing) {
                    // A watermark past the events: a pass of another process (a snapshot's fold), or one whose worker
                    // died before its event.
                    announceCovered(merging.get(), shard, owned, pending.watermark());
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

    private void apply(MergeTables.Merging merging, ShardMerges.Outcome outcome, OwnedShard owned, long now) {
        String shard = outcome.shard();
        String key = tables.key(merging.name(), shard);
        if (outcome.failed() && outcome.tableUnavailable()) {
            // The store, not the shard: no cooldown (every shard would enter one); the next trigger retries.
            log.info(
                    "merge of table {} shard {} waits for the table to be available again: {}",
                    merging.table().location().uri(),
                    shard,
                    outcome.error().getMessage());
            return;
        }
        if (outcome.failed()) {
            cooldowns.recordFailure(
                    MERGE, key, "table " + merging.table().location().uri() + " shard " + shard, outcome.error(), now);
            return;
        }
        cooldowns.clear(MERGE, key);
        MergeResult result = outcome.result();
        // What an earlier pass merged but never announced (it died before its commit), then this pass.
        announceCovered(merging, shard, owned, result.previousWatermark());
        if (result.mergedAnything()) {
            metrics.tableRows(merging.name(), result.rows());
            emit(
                    merging,
                    shard,
                    owned,
                    result.mergedGenerations(),
                    result.newWatermark(),
                    result.rows(),
                    outcome.duration().toMillis(),
                    outcome.trigger());
        }
        PendingShard pending = pendingOf(merging, shard);
        publishMerged(merging.name(), shard, result.newWatermark(), pending == null ? 0 : pending.count());
    }

    /**
     * The merged lag: a watermark is the first offset of its partition not yet in its table's base. With many tables
     * the partition's merged position is the lowest watermark of the tables that still wait for some of its
     * generations (or the highest watermark when none waits).
     */
    private void publishMerged(String table, String shard, long watermark, long pending) {
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

    /**
     * Announces, as RECONCILE, generations the watermark covers that no committed event announced: a pass committed them
     * but its worker died before its event. The table's listing names them (merged seals stay until GC removes them).
     */
    private void announceCovered(MergeTables.Merging merging, String shard, OwnedShard owned, long watermark) {
        if (Long.compareUnsigned(watermark, owned.announcedUpTo()) <= 0) {
            return;
        }
        List<Long> covered = List.of();
        try {
            covered = merging.table().generations().sealedBetween(shard, owned.announcedUpTo(), watermark);
        } catch (RuntimeException e) {
            log.warn(
                    "Table {} shard {}: cannot list the generations up to watermark {} to announce them: {}",
                    merging.table().location(),
                    shard,
                    watermark,
                    e.getMessage());
        }
        if (covered.isEmpty()) {
            owned.announced(watermark);
        } else {
            emit(merging, shard, owned, covered, watermark, 0, 0, MergeTrigger.RECONCILE);
        }
    }

    private void emit(
            MergeTables.Merging merging,
            String shard,
            OwnedShard owned,
            List<Long> generations,
            long watermark,
            long rows,
            long durationMs,
            MergeTrigger trigger) {
        owned.announced(watermark);
        GenerationsMerged event = GenerationsMerged.newBuilder()
                .setShardId(shard)
                .setTableUri(merging.table().location().uri())
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
     * Per table: announces what the owned shards' watermarks cover beyond their events (RECONCILE), publishes their
     * merged positions, and takes on the shards with pending generations that no task owns yet whose key Kafka's own
     * partitioner gives this task's partition.
     */
    private void reconcile(long now) {
        reconciled = true;
        Set<String> keys = ownedKeys();
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
                partitionOf.putIfAbsent(shard, new TopicPartition(pending.topic(), pending.partition()));
            }
            if (!keys.contains(key)) {
                if (pending.count() == 0 || !taskPartition.owns(key)) {
                    continue; // nothing to merge, or another task's
                }
                log.info(
                        "Table {} shard {}: {} pending generations no event brought to any task; merged by this one"
                                + " (partition {}), where Kafka's partitioner puts its key",
                        merging.table().location(),
                        shard,
                        pending.count(),
                        partition);
            }
            if (tables.passes().running(key)) {
                continue; // its outcome is applied at the next tick
            }
            OwnedShard owned = owned(key);
            // Finished passes first: their own events announce what they merged, not RECONCILE.
            for (ShardMerges.Outcome outcome : tables.passes().drain(key)) {
                apply(merging, outcome, owned, now);
            }
            announceCovered(merging, shard, owned, pending.watermark());
            publishMerged(merging.name(), shard, pending.watermark(), pending.count());
            shards.put(key, owned);
        }
    }

    /** The keys of the shards this task owns. */
    private Set<String> ownedKeys() {
        Set<String> keys = new TreeSet<>();
        try (KeyValueIterator<String, OwnedShard> all = shards.all()) {
            all.forEachRemaining(kv -> keys.add(kv.key));
        }
        return keys;
    }

    private OwnedShard owned(String key) {
        OwnedShard owned = shards.get(key);
        return owned == null ? OwnedShard.none() : owned;
    }

    /**
     * The task is closed or its partition revoked: it lets go of its shards, waiting for a round that holds one before
     * the partition's next owner can start committing them.
     */
    @Override
    public void close() {
        Set<String> owned = ownedKeys();
        tables.passes()
                .release(tables.active(), (table, shard) -> owned.contains(tables.key(table, shard)), RELEASE_WAIT);
        metrics.taskClosed(partition);
    }

    /** How long a closing task waits for a round that holds its shards (a commit takes seconds at most). */
    static final Duration RELEASE_WAIT = Duration.ofSeconds(60);
}
