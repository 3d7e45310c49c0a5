package dev.rolloutingest.table.reads;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.util.VectorBatchAppender;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Columns of one pending generation, read whole once and kept with its dataset handle: a scan or tail pass over the
 * generation without a filter copies its rows from here rather than running a lance scan, whose fixed cost (plan,
 * file open, first batch: ~1-3 ms) is most of what reading a generation of a thousand rows costs, and every read of
 * the table pays it for every pending generation. Row {@code i} of each column is {@link PendingKeys.GenerationRows}'
 * row {@code i}. Bounded: a column is read only while the handles' budget has room, the read stops once it would not
 * fit (at most one lance batch of {@link #READ_BATCH_ROWS} rows past it), and a column refused once is not read for
 * this generation again; the columns already kept still serve the reads that ask only for them.
 */
final class GenerationColumns implements AutoCloseable {
    /** Rows a lance batch of the whole-column read holds: what the read may overshoot the budget by. */
    static final int READ_BATCH_ROWS = 4096;

    /** The handles' column budget (a {@link dev.rolloutingest.table.MemoryBudget}), as one generation sees it. */
    interface Budget {
        /** Bytes this generation's columns may still take; none when its handle is not kept. */
        long room();

        /** Counts {@code bytes} newly kept if they still fit; false: they are not kept after all. */
        boolean tryAdmit(long bytes);
    }

    private final BufferAllocator allocator;
    private final Map<String, FieldVector> byName = new HashMap<>();
    private final Set<String> refused = new HashSet<>();
    private boolean misaligned;
    private boolean closed;

    GenerationColumns(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    /**
     * The whole columns {@code names} (each present in the generation), reading those not kept yet in one scan;
     * null when they are not kept: the budget had no room for them, or the rows did not come in address order.
     */
    synchronized Map<String, FieldVector> get(
            List<String> names, Dataset dataset, PendingKeys.GenerationRows rows, Budget budget) {
        if (misaligned || closed) {
            return null;
        }
        List<String> missing =
                names.stream().filter(name -> !byName.containsKey(name)).toList();
        if (!missing.isEmpty()) {
            if (missing.stream().anyMatch(refused::contains)) {
                return null;
            }
            long room = budget.room();
            if (room <= 0) {
                return null; // no read: a handle not kept, or a full budget that evictions may free later
            }
            Map<String, FieldVector> read = read(missing, dataset, rows, room);
            if (read == null) {
                return null;
            }
            if (!budget.tryAdmit(bytes(read))) {
                read.values().forEach(FieldVector::close);
                refused.addAll(missing);
                return null;
            }
            byName.putAll(read);
        }
        Map<String, FieldVector> asked = new LinkedHashMap<>();
        names.forEach(name -> asked.put(name, byName.get(name)));
        return asked;
    }

    private static long bytes(Map<String, FieldVector> columns) {
        long bytes = 0;
        for (FieldVector vector : columns.values()) {
            bytes += vector.getBufferSize();
        }
        return bytes;
    }

    /**
     * One scan of the columns, each gathered into one vector; null when they grow past {@code room} bytes (refused)
     * or a row is not where the keys put it.
     */
    private Map<String, FieldVector> read(
            List<String> names, Dataset dataset, PendingKeys.GenerationRows rows, long room) {
        Map<String, FieldVector> read = new LinkedHashMap<>();
        int at = 0;
        boolean aligned = true;
        boolean fits = true;
        try (LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(new ArrayList<>(names))
                        .withRowAddress(true)
                        .batchSize(Math.max(1, Math.min(rows.size(), READ_BATCH_ROWS)))
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (aligned && fits && reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                BaseIntVector addresses = (BaseIntVector) batch.getVector(PendingKeys.ROW_ADDRESS);
                for (int i = 0; aligned && i < batch.getRowCount(); i++, at++) {
                    aligned = at < rows.size() && addresses.getValueAsLong(i) == rows.address(at);
                }
                for (String name : names) {
                    FieldVector from = batch.getVector(name);
                    FieldVector kept = read.get(name);
                    if (kept == null) {
                        kept = from.getField().createVector(allocator);
                        read.put(name, kept);
                        from.makeTransferPair(kept).transfer();
                    } else {
                        VectorBatchAppender.batchAppend(kept, from);
                    }
                }
                fits = bytes(read) <= room;
            }
        } catch (RuntimeException e) {
            read.values().forEach(FieldVector::close);
            throw e;
        } catch (Exception e) {
            read.values().forEach(FieldVector::close);
            throw new IllegalStateException("reading a pending generation's columns failed: " + e.getMessage(), e);
        }
        if (!fits || !aligned || at != rows.size()) {
            read.values().forEach(FieldVector::close);
            if (fits) {
                misaligned = true;
            } else {
                refused.addAll(names);
            }
            return null;
        }
        return read;
    }

    /** Frees the kept columns; called once no read uses the handle any more. */
    @Override
    public synchronized void close() {
        closed = true;
        byName.values().forEach(FieldVector::close);
        byName.clear();
        allocator.close();
    }
}
