package dev.rolloutingest.table.generations;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.BaseLargeVariableWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;

/**
 * The sizes one table's last sealed batch reached, so a new batch allocates its columns at about those sizes at once
 * instead of growing them from Arrow's defaults by doubling: every doubling allocates fresh memory, copies the column
 * into it and zeroes the rest, and the ingest stream threads' JVM spent ~15 % of its samples faulting in and zeroing
 * fresh pages (perf, docs/benchmarks.md). Learnt from what batches really held, so a trickle's batches stay small; a
 * batch that outgrows the sizes grows as before. Shared by a table's partitions, each setting it as it seals.
 */
public final class BatchSizing {
    /**
     * Rows of the last sealed batch and, per vector (children included, depth first), its bytes per value (strings,
     * binaries) or items per value (lists).
     */
    private record Sizes(int rows, double[] perValue) {}

    private volatile Sizes last;

    /** Sets each column's initial capacity to the last sealed batch's, with an eighth to spare; nothing before one. */
    void presize(VectorSchemaRoot root) {
        Sizes sizes = last;
        if (sizes == null) {
            return;
        }
        int[] next = {0};
        for (FieldVector vector : root.getFieldVectors()) {
            presize(vector, sizes.rows + sizes.rows / 8, sizes.perValue, next);
        }
    }

    private static void presize(FieldVector vector, int count, double[] perValue, int[] next) {
        int k = next[0]++;
        if (k >= perValue.length) {
            return;
        }
        double each = Math.max(1, perValue[k]);
        if (vector instanceof BaseVariableWidthVector v) {
            v.setInitialCapacity(count, each);
        } else if (vector instanceof BaseLargeVariableWidthVector v) {
            v.setInitialCapacity(count, each);
        } else if (vector instanceof ListVector v) {
            v.setInitialCapacity(count, each);
        } else {
            vector.setInitialCapacity(count);
        }
        // children after their parent: their own sizes replace what the parent's call gave them
        int childCount =
                vector instanceof ListVector ? (int) Math.min(Integer.MAX_VALUE / 2, Math.ceil(count * each)) : count;
        for (FieldVector child : vector.getChildrenFromFields()) {
            presize(child, Math.max(1, childCount), perValue, next);
        }
    }

    /** Remembers a sealed batch's sizes ({@code root}'s row count set): what the next batch starts with. */
    void learn(VectorSchemaRoot root) {
        int rows = root.getRowCount();
        if (rows == 0) {
            return;
        }
        List<Double> perValue = new ArrayList<>();
        for (FieldVector vector : root.getFieldVectors()) {
            learn(vector, perValue);
        }
        last = new Sizes(
                rows, perValue.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static void learn(FieldVector vector, List<Double> perValue) {
        int count = Math.max(1, vector.getValueCount());
        if (vector instanceof BaseVariableWidthVector v) {
            perValue.add((double) v.sizeOfValueBuffer() / count);
        } else if (vector instanceof BaseLargeVariableWidthVector v) {
            perValue.add((double) v.sizeOfValueBuffer() / count);
        } else if (vector instanceof ListVector v) {
            perValue.add((double) v.getDataVector().getValueCount() / count);
        } else {
            perValue.add(0.0);
        }
        for (FieldVector child : vector.getChildrenFromFields()) {
            learn(child, perValue);
        }
    }
}
