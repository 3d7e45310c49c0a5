package dev.rolloutingest.table.reads;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;

/**
 * Puts a {@link RowStream}'s next Arrow batch together: the kept rows of a source (a lance batch, or a generation's
 * kept columns) in the answer's columns, a column the source lacks as nulls, and for a tail each row's
 * {@link RowStream#DELETED} mark.
 */
final class BatchAssembler {
    /** The answer's columns a source may hold: all but the tail's delete mark, which is made here. */
    private final List<String> columns;

    private final boolean tail;

    BatchAssembler(Schema schema, boolean tail) {
        this.columns = schema.getFields().stream()
                .map(Field::getName)
                .filter(n -> !n.equals(RowStream.DELETED))
                .toList();
        this.tail = tail;
    }

    /** The answer's columns the dataset has: a generation written before a column was added lacks it. */
    List<String> presentIn(Dataset dataset) {
        Set<String> has = new HashSet<>(
                dataset.getSchema().getFields().stream().map(Field::getName).toList());
        return columns.stream().filter(has::contains).toList();
    }

    /** Copies a batch's kept rows of one column into an empty vector. */
    interface ColumnCopy {
        void copy(FieldVector from, FieldVector to);
    }

    /** Whether the k-th kept row is a delete. */
    interface DeleteAt {
        boolean delete(int k);
    }

    /**
     * The {@code n} kept rows of the source vectors ({@code source} by name: null for a column the source lacks) as
     * the batch of {@code out}: moved when {@code whole} (every row of a batch lance handed over), else copied.
     */
    void fill(
            VectorSchemaRoot out,
            Function<String, FieldVector> source,
            boolean whole,
            int n,
            ColumnCopy copy,
            DeleteAt deleteAt) {
        try {
            for (String name : columns) {
                FieldVector to = out.getVector(name);
                to.clear();
                FieldVector from = source.apply(name);
                if (from != null && whole) {
                    from.makeTransferPair(to).transfer();
                    continue;
                }
                if (from != null) {
                    copy.copy(from, to);
                    continue;
                }
                to.setInitialCapacity(n);
                to.allocateNew();
                for (int k = 0; k < n; k++) {
                    to.setNull(k); // a generation written before the column was added
                }
                to.setValueCount(n);
            }
            if (tail) {
                BitVector deleted = (BitVector) out.getVector(RowStream.DELETED);
                deleted.clear();
                deleted.allocateNew(n);
                for (int k = 0; k < n; k++) {
                    deleted.set(k, deleteAt.delete(k) ? 1 : 0);
                }
                deleted.setValueCount(n);
            }
            out.setRowCount(n);
        } catch (RuntimeException e) {
            out.clear(); // no half-written batch left behind
            throw e;
        }
    }
}
