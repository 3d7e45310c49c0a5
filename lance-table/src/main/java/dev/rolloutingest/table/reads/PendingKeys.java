package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.RowOrder;
import dev.rolloutingest.table.rows.Timestamps;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * The newest pending row of every key (its partition, offset and ingest time only), read from every pending
 * generation of a catalog snapshot: what tells a bulk read which base rows are replaced and which pending rows are
 * the newest. Bounded: more pending rows than {@code rollout.scan.pending.max.rows} fail the read.
 */
final class PendingKeys {
    /** Where a row sits in newest-wins order. */
    record Order(int partition, long offset, long ingestedMicros) {
        boolean newerThan(Order other) {
            return RowOrder.newer(
                    partition,
                    offset,
                    Timestamps.instant(ingestedMicros),
                    other.partition,
                    other.offset,
                    Timestamps.instant(other.ingestedMicros));
        }

        boolean sameRow(int rowPartition, long rowOffset) {
            return partition == rowPartition && offset == rowOffset;
        }
    }

    static final List<String> ORDER_COLUMNS = List.of(
            RolloutSchema.RECORD_ID,
            RolloutSchema.SOURCE_PARTITION,
            RolloutSchema.SOURCE_OFFSET,
            RolloutSchema.INGESTED_AT);

    private final Map<String, Order> newest = new HashMap<>();

    private PendingKeys() {}

    /** No pending row (a snapshot's version, or a read that needs none). */
    static PendingKeys none() {
        return new PendingKeys();
    }

    static PendingKeys read(ReadCatalog catalog, ReadCatalog.Snapshot snapshot, long maxRows, String tableUri) {
        PendingKeys keys = new PendingKeys();
        long rows = 0;
        for (List<ReadCatalog.Pending> shard : snapshot.pendingByShard.values()) {
            for (ReadCatalog.Pending generation : shard) {
                try (DatasetHandles.Lease lease = catalog.generation(generation.listed());
                        LanceScanner scanner = lease.dataset()
                                .newScan(new ScanOptions.Builder()
                                        .columns(ORDER_COLUMNS)
                                        .batchSize(8192)
                                        .build());
                        ArrowReader reader = scanner.scanBatches()) {
                    while (reader.loadNextBatch()) {
                        VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                        rows += batch.getRowCount();
                        if (rows > maxRows) {
                            throw new RolloutTableException.TooManyPendingRows(
                                    tableUri, rows, maxRows, TableSettings.SCAN_PENDING_MAX_ROWS);
                        }
                        keys.add(batch);
                    }
                } catch (RolloutTableException e) {
                    throw e;
                } catch (Exception e) {
                    throw new RolloutTableException.GenerationUnreadable(
                            tableUri,
                            generation.listed().shard(),
                            generation.listed().generation(),
                            generation.listed().folder(),
                            e);
                }
            }
        }
        return keys;
    }

    private void add(VectorSchemaRoot batch) {
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        IntVector partitions = (IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION);
        BigIntVector offsets = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
        TimeStampMicroTZVector ingested = (TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT);
        for (int i = 0; i < batch.getRowCount(); i++) {
            Order order = new Order(partitions.get(i), offsets.get(i), ingested.get(i));
            newest.merge(ids.getObject(i).toString(), order, (current, row) -> row.newerThan(current) ? row : current);
        }
    }

    boolean isEmpty() {
        return newest.isEmpty();
    }

    int size() {
        return newest.size();
    }

    java.util.Set<String> keys() {
        return newest.keySet();
    }

    /** The key's newest pending row, or null when no pending generation holds the key. */
    Order newest(String key) {
        return newest.get(key);
    }
}
