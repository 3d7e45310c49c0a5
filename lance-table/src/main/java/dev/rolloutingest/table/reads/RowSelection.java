package dev.rolloutingest.table.reads;

import org.apache.arrow.vector.FieldVector;

/** Row indices of a source batch that are kept, and whether each is a delete. */
final class RowSelection {
    private int[] indices;
    private boolean[] deletes;
    private int size;

    RowSelection(int capacity) {
        indices = new int[capacity];
        deletes = new boolean[capacity];
    }

    /** Every row of a batch, none a delete. */
    static RowSelection all(int rows) {
        RowSelection all = new RowSelection(rows);
        for (int i = 0; i < rows; i++) {
            all.add(i, false);
        }
        return all;
    }

    void add(int index, boolean delete) {
        indices[size] = index;
        deletes[size] = delete;
        size++;
    }

    int size() {
        return size;
    }

    boolean delete(int k) {
        return deletes[k];
    }

    /** The selected rows of one column (ascending), copied a run of consecutive rows at a time. */
    void copy(FieldVector from, FieldVector to) {
        RowRuns runs = new RowRuns();
        for (int k = 0; k < size; k++) {
            runs.add(indices[k], 1);
        }
        runs.copy(from, to);
    }

    void truncate(int n) {
        size = Math.min(size, n);
    }

    interface Drop {
        boolean test(int index, int position);
    }

    void removeIf(Drop drop) {
        int to = 0;
        for (int k = 0; k < size; k++) {
            if (!drop.test(indices[k], k)) {
                indices[to] = indices[k];
                deletes[to] = deletes[k];
                to++;
            }
        }
        size = to;
    }
}
