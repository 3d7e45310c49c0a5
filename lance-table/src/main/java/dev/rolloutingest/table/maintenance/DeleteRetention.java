package dev.rolloutingest.table.maintenance;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.BaseDeletes;
import dev.rolloutingest.table.rows.DroppedDeletes;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Timestamps;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.lance.compaction.Compaction;
import org.lance.compaction.CompactionOptions;
import org.lance.compaction.CompactionPlan;
import org.lance.compaction.CompactionTask;
import org.lance.compaction.RewriteResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The drop of deletes past their retention: a delete row stays beside the base while an older value of its key may
 * still merge, and goes once none can.
 */
final class DeleteRetention {
    private static final Logger log = LoggerFactory.getLogger(DeleteRetention.class);

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;

    DeleteRetention(LanceIo lance, ObjectStore store, GenerationCatalog catalog) {
        this.lance = lance;
        this.store = store;
        this.catalog = catalog;
    }

    /**
     * Drops the deletes that no older value can reach any more: delete rows (tombstones, {@link Tombstones}) kept beside
     * the base ({@link BaseDeletes}) ingested before {@code retention} ago and before the oldest row of every pending
     * generation of the table. A delete is kept while a value older than it may still merge (from another partition:
     * keyless records, a grown partition count), so that the value loses to it; once every such value is merged, the
     * row only costs its bytes. Values not sealed yet are ingested after now minus the seal age, far inside the
     * retention. First, deletes an older version of this code kept in the base as rows are moved beside it ({@link
     * #moveFromBase}).
     */
    TableMaintenance.DropResult drop(Duration retention, int attempts) {
        Instant cutoff = Instant.now().minus(retention);
        long moved = moveFromBase(attempts);
        if (moved > 0) {
            log.info("Table {}: moved {} deletes kept in the base beside it", lance.location(), moved);
        }
        try (Dataset deletes = BaseDeletes.open(lance)) {
            if (deletes == null) {
                return new TableMaintenance.DropResult(0, cutoff);
            }
            Dropped dropped = dropped(deletes, cutoff);
            if (dropped.count() == 0) {
                return new TableMaintenance.DropResult(0, cutoff);
            }
            // only when there is something to drop: the pending generations are read in full for it
            Instant oldestPending = oldestPendingRow();
            if (oldestPending != null && oldestPending.isBefore(cutoff)) {
                cutoff = oldestPending;
                dropped = dropped(deletes, cutoff); // fewer: only those older than every pending row
            }
            long count = dropped.count();
            if (count == 0) {
                return new TableMaintenance.DropResult(0, cutoff);
            }
            // before the drop: a tail whose cursor is below a dropped delete must be refused, never answered
            // without it (a failed drop leaves the mark high, which only refuses more)
            DroppedDeletes.raise(store, dropped.highestOffsets());
            try {
                deletes.delete(olderThan(cutoff));
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw LanceIo.unchecked(e);
            }
            log.info(
                    "Table {}: dropped {} deletes ingested before {} (nothing older can merge)",
                    lance.location(),
                    count,
                    cutoff);
            return new TableMaintenance.DropResult(count, cutoff);
        }
    }

    /** Deletes ingested before a cutoff: how many, and per partition the highest offset among them. */
    private record Dropped(long count, Map<Integer, Long> highestOffsets) {}

    private static String olderThan(Instant cutoff) {
        return RolloutSchema.INGESTED_AT + " < TIMESTAMP '" + cutoff + "'";
    }

    private static Dropped dropped(Dataset deletes, Instant cutoff) {
        Map<Integer, Long> offsets = new HashMap<>();
        long[] count = {0};
        Tombstones.forEach(deletes, olderThan(cutoff), (batch, i) -> {
            offsets.merge(
                    ((IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION)).get(i),
                    ((BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET)).get(i),
                    Math::max);
            count[0]++;
        });
        return new Dropped(count[0], offsets);
    }

    /**
     * Moves the deletes an older version of this code kept in the base as rows beside it: appended to the deletes
     * first (a read between the two finds each twice, the same row, which newest-wins keeps once), then marked deleted
     * in the base by a fenced commit, refused and redone when a merge lands first. No merge of this version writes a
     * delete into the base, so once moved none comes back.
     */
    long moveFromBase(int attempts) {
        boolean appended = false;
        for (int attempt = 0; attempt < attempts; attempt++) {
            try (Dataset base = lance.openBase()) {
                List<RolloutRow> rows = new ArrayList<>();
                Map<Integer, List<Integer>> addresses = new HashMap<>();
                Tombstones.forEach(base, Tombstones.CANDIDATES, (batch, i) -> {
                    long address = ((UInt8Vector) batch.getVector("_rowaddr")).get(i);
                    addresses
                            .computeIfAbsent((int) (address >>> 32), f -> new ArrayList<>())
                            .add((int) address);
                    Instant ingested = Timestamps.instant(
                            ((TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT)).get(i));
                    String id = new String(
                            ((VarCharVector) batch.getVector(RolloutSchema.RECORD_ID)).get(i), StandardCharsets.UTF_8);
                    rows.add(new RolloutRow(
                            Tombstones.of(id, ingested),
                            ((IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION)).get(i),
                            ((BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET)).get(i),
                            ingested));
                });
                if (rows.isEmpty()) {
                    return 0;
                }
                if (!appended) {
                    try (VectorSchemaRoot batch = ArrowRows.toRoot(lance.allocator(), rows)) {
                        BaseDeletes.append(lance, List.of(batch));
                    }
                    appended = true;
                }
                try {
                    FencedCommit.commit(
                                    lance,
                                    store,
                                    base,
                                    base.getFragments(),
                                    List.of(),
                                    List.of(),
                                    new FencedCommit.Deletions(addresses),
                                    0,
                                    Map.of("rollout.maintenance", "move " + rows.size() + " deletes beside the base"))
                            .dataset()
                            .close();
                    return rows.size();
                } catch (FencedCommit.Preempted e) {
                    log.info("{}; moving deletes again on the newer base", e.getMessage());
                }
            }
        }
        throw new RolloutTableException.Contended(
                lance.location().uri(), "moving deletes beside the base was preempted " + attempts + " times in a row");
    }

    /** Fragments of the deletes beside the base past which {@link #compactKept} rewrites them. */
    static final int KEPT_FRAGMENTS_MAX = 32;

    /**
     * Rewrites the deletes kept beside the base into few fragments once they are spread over more than {@link
     * #KEPT_FRAGMENTS_MAX}: every merge round with deletes appends one, and reads and merges scan them. A plain lance
     * compaction (the dataset has no fence and no index); a drop committed meanwhile makes it fail, to be tried again
     * at the next run.
     */
    void compactKept() {
        try (Dataset deletes = BaseDeletes.open(lance)) {
            if (deletes == null) {
                return;
            }
            int before = deletes.getFragments().size();
            if (before <= KEPT_FRAGMENTS_MAX) {
                return;
            }
            CompactionOptions options = CompactionOptions.builder()
                    .withTargetRowsPerFragment(1_000_000)
                    .build();
            CompactionPlan plan = Compaction.planCompaction(deletes, options);
            List<RewriteResult> rewritten = new ArrayList<>();
            for (CompactionTask task : plan.getCompactionTasks()) {
                rewritten.add(task.execute(deletes));
            }
            if (!rewritten.isEmpty()) {
                Compaction.commitCompaction(deletes, rewritten, options);
            }
            try (Dataset after = BaseDeletes.open(lance)) {
                log.info(
                        "Table {}: compacted the deletes beside the base from {} fragments into {}",
                        lance.location(),
                        before,
                        after.getFragments().size());
            }
        } catch (RuntimeException e) {
            log.warn(
                    "Table {}: compacting the deletes beside the base failed ({}); tried again at the next run",
                    lance.location(),
                    e.getMessage());
        }
    }

    /** The earliest ingested_at of any row in a pending generation of any shard; null when none is pending. */
    private Instant oldestPendingRow() {
        Map<String, Long> watermarks;
        try (Dataset base = lance.openBase()) {
            watermarks = MemWalWatermarks.read(base);
        }
        Instant oldest = null;
        for (Map.Entry<String, List<GenerationCatalog.Listed>> shard :
                catalog.sealedByShard().entrySet()) {
            long watermark = watermarks.getOrDefault(shard.getKey(), 0L);
            for (GenerationCatalog.Listed generation : shard.getValue()) {
                if (Long.compareUnsigned(generation.generation(), watermark) <= 0) {
                    continue;
                }
                Instant first = earliestRow(generation);
                if (first != null && (oldest == null || first.isBefore(oldest))) {
                    oldest = first;
                }
            }
        }
        return oldest;
    }

    private Instant earliestRow(GenerationCatalog.Listed generation) {
        try (Dataset dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
                org.lance.ipc.LanceScanner scanner = dataset.newScan(new org.lance.ipc.ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.INGESTED_AT))
                        .build());
                org.apache.arrow.vector.ipc.ArrowReader reader = scanner.scanBatches()) {
            long min = Long.MAX_VALUE;
            while (reader.loadNextBatch()) {
                org.apache.arrow.vector.TimeStampMicroTZVector at = (org.apache.arrow.vector.TimeStampMicroTZVector)
                        reader.getVectorSchemaRoot().getVector(RolloutSchema.INGESTED_AT);
                for (int i = 0; i < at.getValueCount(); i++) {
                    min = Math.min(min, at.get(i));
                }
            }
            return min == Long.MAX_VALUE ? null : Timestamps.instant(min);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException.GenerationUnreadable(
                    lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
        }
    }
}
