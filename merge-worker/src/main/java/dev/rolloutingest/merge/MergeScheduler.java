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
import java.util.Optional;
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
 * (count trigger, time trigger), asks the table for passes ({@link ShardMerges}), and applies finished
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
    private KeyValueStore<String, ShardBacklog> backlogs;
    private CooldownBook cooldowns;
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
        this.backlogs = MergeStores.backlogs(context);
        this.cooldowns = new CooldownBook(MergeStores.cooldowns(context), policy, metrics);
        this.partition = context.taskId().partition();
        context.schedule(Duration.ofMillis(config.checkIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::tick);
        context.schedule(
                Duration.ofMillis(config.reconcileIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::reconcile);
        // Compaction, index upkeep and GC are table-wide: each table's run on one task, the one its name hashes to
        // (maintain), so merge-worker instances share the upkeep of a root's tables out as they share its merges.
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
        if (!ownedByThisTask(key)) {
            // Keyed otherwise (by shard alone, as before tables had keys of their own): its owner's reconcile finds the
            // generation; taken here as well, two tasks would keep a backlog of one table's shard.
            log.debug("Generation {} of {} belongs to another task; left to its reconcile", event.getGeneration(), key);
            return;
        }
        partitionOf.put(shard, new TopicPartition(event.getTopic(), event.getPartition()));
        ShardBacklog backlog = backlog(key);
        if (event.getGeneration() <= backlog.announcedUpTo()) {
            return; // merged and announced already (its event was late, the table told us first)
        }
        backlog.add(event.getGeneration(), event.getSealedAt().toEpochMilli());
        put(key, backlog);
        maybeTrigger(key, backlog, System.currentTimeMillis());
    }

    private void tick(long now) {
        if (!reconciled) {
            reconcile(now);
        }
        long total = 0;
        Map<String, MergeMetrics.TableBacklog> byTable = new HashMap<>();
        List<String> keys = new ArrayList<>();
        try (KeyValueIterator<String, ShardBacklog> all = backlogs.all()) {
            all.forEachRemaining(kv -> keys.add(kv.key));
        }
        for (String key : keys) {
            ShardBacklog backlog = backlog(key);
            MergeTables.TableShard tableShard = tables.parse(key);
            Optional<MergeTables.Merging> merging = tables.of(tableShard.table());
            if (merging.isPresent()) {
                List<ShardMerges.Outcome> outcomes = tables.passes().drain(key);
                for (ShardMerges.Outcome outcome : outcomes) {
                    apply(merging.get(), outcome, backlog, now);
                }
                if (!outcomes.isEmpty()) {
                    put(key, backlog); // only what changed reaches the changelog
                }
            }
            boolean cooling = cooldowns.gates(MERGE, key, now); // read once: the trigger and the gauge
            if (merging.isPresent()) {
                maybeTrigger(tableShard.shard(), merging.get(), backlog, now, cooling);
            }
            total += backlog.count();
            byTable.merge(
                    tableShard.table(),
                    MergeMetrics.TableBacklog.ofShard(backlog.count(), cooling),
                    MergeMetrics.TableBacklog::plus);
        }
        metrics.backlog(partition, total);
        metrics.tableBacklog(partition, byTable);
        for (TableMaintenanceRunner.Outcome outcome : maintenance.drain(o -> ownedByThisTask(o.table()))) {
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
        cooldowns.expire(now);
    }

    private void maybeTrigger(String key, ShardBacklog backlog, long now) {
        if (backlog.count() == 0) {
            return;
        }
        MergeTables.TableShard tableShard = tables.parse(key);
        Optional<MergeTables.Merging> merging = tables.of(tableShard.table());
        if (merging.isPresent()) {
            maybeTrigger(tableShard.shard(), merging.get(), backlog, now, cooldowns.gates(MERGE, key, now));
        }
    }

    /** Asks for the shard's merge when its count or age trigger is due, unless it runs or cools down. */
    private void maybeTrigger(
            String shard, MergeTables.Merging merging, ShardBacklog backlog, long now, boolean cooling) {
        String key = tables.key(merging.name(), shard);
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

    private void apply(MergeTables.Merging merging, ShardMerges.Outcome outcome, ShardBacklog backlog, long now) {
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
        announceCovered(merging, shard, backlog, result.previousWatermark());
        if (result.mergedAnything()) {
            metrics.tableRows(merging.name(), result.rows());
            emit(
                    merging,
                    shard,
                    backlog,
                    result.mergedGenerations(),
                    result.newWatermark(),
                    result.rows(),
                    outcome.duration().toMillis(),
                    outcome.trigger());
        }
        backlog.mergedUpTo(result.newWatermark());
        publishMerged(merging.name(), shard, result.newWatermark(), backlog.count());
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
     * Announces, as RECONCILE, generations the watermark covers that no committed event announced: a pass
     * committed them but its worker died before its event. Their sealed events may not have been re-read yet
     * (the backlog does not know them), so the table's listing names them too.
     */
    private void announceCovered(MergeTables.Merging merging, String shard, ShardBacklog backlog, long watermark) {
        if (Long.compareUnsigned(watermark, backlog.announcedUpTo()) > 0) {
            TreeSet<Long> covered = new TreeSet<>(backlog.unannouncedUpTo(watermark));
            try {
                covered.addAll(merging.table().sealedGenerationsBetween(shard, backlog.announcedUpTo(), watermark));
            } catch (RuntimeException e) {
                log.warn(
                        "Table {} shard {}: cannot list the generations up to watermark {} to announce them: {}",
                        merging.table().location(),
                        shard,
                        watermark,
                        e.getMessage());
            }
            if (!covered.isEmpty()) {
                emit(merging, shard, backlog, List.copyOf(covered), watermark, 0, 0, MergeTrigger.RECONCILE);
            }
        }
        backlog.mergedUpTo(watermark);
    }

    private void emit(
            MergeTables.Merging merging,
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
     * Makes each owned shard's backlog equal to the table's view: drops what the watermark covers (a pass
     * committed before a crash lost its event: announced now as RECONCILE) and adds sealed generations no
     * event announced. Shards never seen in an event are owned by the task their key partitions to.
     */
    private void reconcile(long now) {
        reconciled = true;
        Set<String> keys = new TreeSet<>();
        try (KeyValueIterator<String, ShardBacklog> all = backlogs.all()) {
            all.forEachRemaining(kv -> keys.add(kv.key));
        }
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

    /** Reconciles the shards of one table this task owns (the keys of the store name its shards among others'). */
    private void reconcile(MergeTables.Merging merging, Set<String> keys, long now) {
        RolloutTable table = merging.table();
        Map<String, Long> tableWatermarks;
        List<String> tableShards;
        try {
            tableWatermarks = table.watermarks();
            tableShards = table.shards();
        } catch (Exception e) {
            log.warn("Table {}: reconcile skipped, the table is unreadable: {}", table.location(), e.getMessage());
            return;
        }
        Set<String> owned = new TreeSet<>();
        for (String key : keys) {
            MergeTables.TableShard tableShard = tables.parse(key);
            if (tableShard.table().equals(merging.name())) {
                owned.add(tableShard.shard());
            }
        }
        for (String shard : tableShards) {
            if (ownedByThisTask(tables.key(merging.name(), shard))) {
                owned.add(shard);
            }
        }
        for (String shard : owned) {
            String key = tables.key(merging.name(), shard);
            if (tables.passes().running(key)) {
                continue; // its outcome is applied at the next tick
            }
            long watermark = tableWatermarks.getOrDefault(shard, 0L);
            ShardBacklog backlog = backlog(key);
            // Finished passes first: their own events announce what they merged, not RECONCILE.
            for (ShardMerges.Outcome outcome : tables.passes().drain(key)) {
                apply(merging, outcome, backlog, now);
            }
            announceCovered(merging, shard, backlog, watermark);
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
            publishMerged(merging.name(), shard, watermark, backlog.count());
            put(key, backlog);
        }
    }

    /**
     * Whether a table's shard ({@link MergeTables#key}) is this task's: where the sealed topic's key puts it. Of a
     * table's name: whether its upkeep is.
     */
    private boolean ownedByThisTask(String key) {
        // The default partitioner of a keyed record: murmur2 of the key bytes.
        return Utils.toPositive(Utils.murmur2(key.getBytes(StandardCharsets.UTF_8))) % eventPartitions == partition;
    }

    /** Upkeep of every table this process has merged or reconciled; each table's cooldown gates its own. */
    private void maintain(String kind, long now) {
        for (MergeTables.Merging merging : tables.active()) {
            RolloutTable table = merging.table();
            String target = table.location().uri();
            if (!ownedByThisTask(merging.name()) || cooldowns.gates(kind, target, now)) {
                continue;
            }
            maintenance.submit(merging.name(), target, kind, () -> switch (kind) {
                case "compact" -> table.compact(config.compactionTargetRows()).toString();
                case "index" -> table.optimizeKeyIndex(config.keyIndexTiers()).toString();
                case "deletes" -> table.dropDeletes(config.deleteRetention()).toString();
                default -> table.collectGarbage(config.gcGrace()).toString();
            });
        }
    }

    private ShardBacklog backlog(String key) {
        ShardBacklog backlog = backlogs.get(key);
        return backlog == null ? ShardBacklog.empty() : backlog;
    }

    private void put(String key, ShardBacklog backlog) {
        backlogs.put(key, backlog);
    }

    /**
     * The task is closed or its partition revoked: it lets go of its shards, waiting for a round that holds one before
     * the partition's next owner can start committing them.
     */
    @Override
    public void close() {
        tables.passes()
                .release(tables.active(), (table, shard) -> ownedByThisTask(tables.key(table, shard)), RELEASE_WAIT);
        metrics.taskClosed(partition);
    }

    /** How long a closing task waits for a round that holds its shards (a commit takes seconds at most). */
    static final Duration RELEASE_WAIT = Duration.ofSeconds(60);
}
