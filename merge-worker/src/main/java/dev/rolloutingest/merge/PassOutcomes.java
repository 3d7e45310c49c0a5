package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.generations.PendingShard;
import dev.rolloutingest.table.merge.MergeResult;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies an events task's finished passes on its own thread: the shard's cooldown, its GenerationsMerged event, its
 * merged position. Generations a watermark covers that no committed event announced (a pass whose worker died before
 * its event) are announced as RECONCILE.
 */
final class PassOutcomes {
    // the scheduler's logger: these lines read in order with its own, under the name operators filter on
    private static final Logger log = LoggerFactory.getLogger(MergeScheduler.class);

    private final ProcessorContext<String, GenerationsMerged> context;
    private final MergeTables tables;
    private final CooldownBook cooldowns;
    private final MergeMetrics metrics;
    private final MergedPositions positions;

    PassOutcomes(
            ProcessorContext<String, GenerationsMerged> context,
            MergeTables tables,
            CooldownBook cooldowns,
            MergeMetrics metrics,
            MergedPositions positions) {
        this.context = context;
        this.tables = tables;
        this.cooldowns = cooldowns;
        this.metrics = metrics;
        this.positions = positions;
    }

    void apply(MergeTables.Merging merging, ShardMerges.Outcome outcome, OwnedShard owned, long now) {
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
                    MergeScheduler.MERGE,
                    key,
                    "table " + merging.table().location().uri() + " shard " + shard,
                    outcome.error(),
                    now);
            return;
        }
        cooldowns.clear(MergeScheduler.MERGE, key);
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
        PendingShard pending = MergeScheduler.pendingOf(merging, shard);
        positions.publish(merging.name(), shard, result.newWatermark(), pending == null ? 0 : pending.count());
    }

    /**
     * Announces, as RECONCILE, generations the watermark covers that no committed event announced: a pass committed them
     * but its worker died before its event. The table's listing names them (merged seals stay until GC removes them).
     */
    void announceCovered(MergeTables.Merging merging, String shard, OwnedShard owned, long watermark) {
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
}
