package dev.rolloutingest.table.maintenance;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.rows.DroppedDeletes;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Timestamps;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
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
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The drop of deletes past their retention: a delete row stays in the base while an older value of its key may still
 * merge, and goes once none can.
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
     * Drops the deletes that no older value can reach any more: delete rows (tombstones, {@link Tombstones}) ingested
     * before {@code retention} ago and before the oldest row of every pending generation of the table. A delete stays in
     * the base while a value older than it may still merge (from another partition: keyless records, a grown partition
     * count), so that the value loses to it; once every such value is merged, the row only costs its bytes. Values not
     * sealed yet are ingested after now minus the seal age, far inside the retention. The drop is a fenced commit
     * ({@link FencedCommit}), refused and redone when a merge lands first.
     */
    TableMaintenance.DropResult drop(Duration retention, int attempts) {
        Instant cutoff = Instant.now().minus(retention);
        String filter = Tombstones.CANDIDATES + " AND " + RolloutSchema.INGESTED_AT + " < TIMESTAMP '" + cutoff + "'";
        Instant oldestPending = null;
        boolean pendingRead = false;
        for (int attempt = 0; attempt < attempts; attempt++) {
            try (Dataset base = lance.openBase()) {
                Map<Long, Long> deletes = new HashMap<>(); // row address -> ingested_at (micros)
                Map<Long, long[]> positions = new HashMap<>(); // row address -> {partition, offset}
                Tombstones.forEach(base, filter, (batch, i) -> {
                    long address = ((UInt8Vector) batch.getVector("_rowaddr")).get(i);
                    deletes.put(address, ((TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT)).get(i));
                    positions.put(address, new long[] {
                        ((IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION)).get(i),
                        ((BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET)).get(i)
                    });
                });
                if (!pendingRead && !deletes.isEmpty()) {
                    // only when there is something to drop: the pending generations are read in full for it
                    oldestPending = oldestPendingRow();
                    pendingRead = true;
                    if (oldestPending != null && oldestPending.isBefore(cutoff)) {
                        cutoff = oldestPending;
                    }
                }
                long before = Timestamps.micros(cutoff);
                Map<Integer, List<Integer>> rows = new HashMap<>();
                Map<Integer, Long> droppedOffsets = new HashMap<>(); // partition -> highest offset dropped
                long[] count = {0};
                deletes.forEach((address, ingested) -> {
                    if (ingested < before) {
                        rows.computeIfAbsent((int) (address >>> 32), f -> new ArrayList<>())
                                .add((int) (long) address);
                        long[] at = positions.get(address);
                        droppedOffsets.merge((int) at[0], at[1], Math::max);
                        count[0]++;
                    }
                });
                if (count[0] == 0) {
                    return new TableMaintenance.DropResult(0, cutoff);
                }
                // before the commit: a tail whose cursor is below a dropped delete must be refused, never answered
                // without it (a failed commit leaves the mark high, which only refuses more)
                DroppedDeletes.raise(store, droppedOffsets);
                try {
                    FencedCommit.commit(
                                    lance,
                                    store,
                                    base,
                                    base.getFragments(),
                                    List.of(),
                                    List.of(),
                                    new FencedCommit.Deletions(rows),
                                    0,
                                    Map.of("rollout.maintenance", "drop deletes ingested before " + cutoff))
                            .dataset()
                            .close();
                    log.info(
                            "Table {}: dropped {} deletes ingested before {} (nothing older can merge)",
                            lance.location(),
                            count[0],
                            cutoff);
                    return new TableMaintenance.DropResult(count[0], cutoff);
                } catch (FencedCommit.Preempted e) {
                    log.info("{}; dropping deletes again on the newer base", e.getMessage());
                }
            }
        }
        throw new RolloutTableException.Contended(
                lance.location().uri(), "dropping old deletes was preempted " + attempts + " times in a row");
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
