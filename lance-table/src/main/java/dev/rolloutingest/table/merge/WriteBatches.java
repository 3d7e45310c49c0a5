package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.merge.MergeSource.Row;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The rows a commit writes, as Arrow batches in the table's schema: slices of the batches a {@link MergeSource} kept
 * where rows run together, copies where they scatter. The caller closes the batches.
 */
final class WriteBatches {
    private WriteBatches() {}

    /**
     * Below this many consecutive rows a slice (a new root over shared buffers, ~0.3 ms) costs more than copying
     * the rows one by one (~20 us each).
     */
    static final int MIN_SLICE_ROWS = 32;

    /**
     * The rows as batches for an append, in no particular order (an append needs none): runs of at least
     * {@link #MIN_SLICE_ROWS} consecutive rows of a batch are slices sharing its buffers, nothing copied (a whole
     * generation of new keys is a few slices); rows scattered between kept and joined ones are copied. The caller
     * closes them.
     */
    static List<VectorSchemaRoot> slices(List<Row> rows, Schema table, BufferAllocator allocator) {
        Map<VectorSchemaRoot, BitSet> byBatch = new IdentityHashMap<>();
        List<VectorSchemaRoot> order = new ArrayList<>();
        for (Row row : rows) {
            byBatch.computeIfAbsent(row.batch(), batch -> {
                        order.add(batch);
                        return new BitSet();
                    })
                    .set(row.index());
        }
        List<VectorSchemaRoot> slices = new ArrayList<>();
        List<Row> scattered = new ArrayList<>();
        try {
            for (VectorSchemaRoot batch : order) {
                BitSet kept = byBatch.get(batch);
                for (int from = kept.nextSetBit(0); from >= 0; from = kept.nextSetBit(from)) {
                    int to = kept.nextClearBit(from);
                    if (to - from < MIN_SLICE_ROWS || !sameColumns(batch.getSchema(), table)) {
                        for (int i = from; i < to; i++) {
                            scattered.add(new Row(null, null, batch, i, null, -1));
                        }
                    } else {
                        VectorSchemaRoot slice = batch.slice(from, to - from);
                        try {
                            // the base's schema exactly (the scan's may carry other metadata)
                            slices.add(new VectorSchemaRoot(table, slice.getFieldVectors(), to - from));
                        } catch (RuntimeException e) {
                            slice.close();
                            throw e;
                        }
                    }
                    from = to;
                }
            }
            slices.addAll(chunks(scattered, 8192, table, allocator));
            return slices;
        } catch (RuntimeException e) {
            slices.forEach(VectorSchemaRoot::close);
            throw e;
        }
    }

    /** Same column names in the same order (a generation older than a column producers added has fewer). */
    private static boolean sameColumns(Schema a, Schema b) {
        if (a.getFields().size() != b.getFields().size()) {
            return false;
        }
        for (int i = 0; i < a.getFields().size(); i++) {
            if (!a.getFields().get(i).getName().equals(b.getFields().get(i).getName())) {
                return false;
            }
        }
        return true;
    }

    /**
     * The rows copied into batches of at most {@code chunkRows} in the table's schema, in order; the caller closes
     * them. Columns are matched by name: a column producers added that a row's generation lacks stays null; a
     * column the table lacks fails the copy (it would be lost).
     */
    static List<VectorSchemaRoot> chunks(List<Row> rows, int chunkRows, Schema table, BufferAllocator allocator) {
        List<VectorSchemaRoot> chunks = new ArrayList<>();
        try {
            for (int from = 0; from < rows.size(); from += chunkRows) {
                int to = Math.min(rows.size(), from + chunkRows);
                VectorSchemaRoot chunk = VectorSchemaRoot.create(table, allocator);
                chunks.add(chunk);
                chunk.allocateNew();
                List<FieldVector> out = chunk.getFieldVectors();
                VectorSchemaRoot lastBatch = null;
                FieldVector[] sources = null;
                for (int k = from; k < to; k++) {
                    Row row = rows.get(k);
                    if (row.batch() != lastBatch) {
                        lastBatch = row.batch();
                        sources = sourcesFor(lastBatch, chunk);
                    }
                    for (int c = 0; c < out.size(); c++) {
                        if (sources[c] != null) {
                            out.get(c).copyFromSafe(row.index(), k - from, sources[c]);
                        }
                    }
                }
                chunk.setRowCount(to - from);
            }
            return chunks;
        } catch (RuntimeException e) {
            chunks.forEach(VectorSchemaRoot::close);
            throw e;
        }
    }

    /** For each column of {@code into}, the batch's column of its name (null: the batch lacks it). */
    private static FieldVector[] sourcesFor(VectorSchemaRoot batch, VectorSchemaRoot into) {
        if (batch.getFieldVectors().size() > into.getFieldVectors().size()) {
            for (FieldVector column : batch.getFieldVectors()) {
                if (into.getVector(column.getName()) == null) {
                    throw new IllegalStateException("the base lacks column " + column.getName()
                            + " of a generation; it is added to the base before any generation holds it");
                }
            }
        }
        FieldVector[] sources = new FieldVector[into.getFieldVectors().size()];
        for (int c = 0; c < sources.length; c++) {
            sources[c] = batch.getVector(into.getFieldVectors().get(c).getName());
        }
        return sources;
    }
}
