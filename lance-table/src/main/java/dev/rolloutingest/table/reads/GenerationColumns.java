package dev.rolloutingest.table.reads;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;
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
 * row {@code i}. Bounded: columns the handles' budget cannot take are not kept (the pass scans), and a generation
 * refused once is not read for it again.
 */
final class GenerationColumns implements AutoCloseable {
    private final BufferAllocator allocator;
    private final Map<String, FieldVector> byName = new HashMap<>();
    private boolean refused;
    private boolean closed;

    GenerationColumns(BufferAllocator allocator) {
        this.allocator = allocator;
    }

    /**
     * The whole columns {@code names} (each present in the generation), reading those not kept yet in one scan;
     * null when they cannot be kept: {@code admit} refused their bytes, or the rows did not come in address order.
     */
    synchronized Map<String, FieldVector> get(
            List<String> names, Dataset dataset, PendingKeys.GenerationRows rows, LongPredicate admit) {
        if (refused || closed) {
            return null;
        }
        List<String> missing =
                names.stream().filter(name -> !byName.containsKey(name)).toList();
        if (!missing.isEmpty()) {
            Map<String, FieldVector> read = read(missing, dataset, rows);
            long bytes = 0;
            if (read != null) {
                for (FieldVector vector : read.values()) {
                    bytes += vector.getBufferSize();
                }
            }
            if (read == null || !admit.test(bytes)) {
                if (read != null) {
                    read.values().forEach(FieldVector::close);
                }
                refused = true;
                return null;
            }
            byName.putAll(read);
        }
        Map<String, FieldVector> asked = new LinkedHashMap<>();
        names.forEach(name -> asked.put(name, byName.get(name)));
        return asked;
    }

    /** One scan of the columns, each gathered into one vector; null when a row is not where the keys put it. */
    private Map<String, FieldVector> read(List<String> names, Dataset dataset, PendingKeys.GenerationRows rows) {
        Map<String, FieldVector> read = new LinkedHashMap<>();
        int at = 0;
        boolean aligned = true;
        try (LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(new ArrayList<>(names))
                        .withRowAddress(true)
                        .batchSize(Math.max(1, rows.size()))
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (aligned && reader.loadNextBatch()) {
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
            }
        } catch (RuntimeException e) {
            read.values().forEach(FieldVector::close);
            throw e;
        } catch (Exception e) {
            read.values().forEach(FieldVector::close);
            throw new IllegalStateException("reading a pending generation's columns failed: " + e.getMessage(), e);
        }
        if (!aligned || at != rows.size()) {
            read.values().forEach(FieldVector::close);
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
