package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.reads.StreamPass.Keep;
import dev.rolloutingest.table.rows.NewestWins;
import java.io.IOException;
import java.util.List;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;

/**
 * The answer of a scan or a tail: Arrow batches of the newest value of each key (and, for a tail, its deletes) read
 * while the caller consumes them, and the cursor of what it holds. Never materialized: it holds one batch of lance's
 * and one of its own (plus lance's read-ahead), whatever the result size. Close it to release the table's view.
 *
 * <p>It runs passes ({@link StreamPasses}), one scan each: first over the base (values and, for a tail, deletes), then
 * over each pending generation. Which rows of a pass it shows, by {@link NewestWins}, {@link StreamSurvivors} tells;
 * {@link BatchAssembler} makes them its next batch.
 */
public final class RowStream extends ArrowReader {
    /** The column a tail adds: true for a delete (its other values are those of the delete row, empty). */
    public static final String DELETED = "_deleted";

    private final BufferAllocator allocator;
    private final Schema schema;
    private final long limit;
    private final int batchRows;
    private final TailCursor cursor;
    private final boolean more;
    private final List<AutoCloseable> resources;
    private final BatchAssembler assembler;
    private final StreamSurvivors survivors;
    private final StreamPasses passes;

    /** The next row of the open pass's kept columns. */
    private int keptFrom;

    private long delivered;

    RowStream(
            BufferAllocator allocator,
            Schema schema,
            boolean tail,
            List<StreamPass> passes,
            Function<GenerationCatalog.Listed, DatasetHandles.Lease> generations,
            PendingKeys pending,
            Dataset base,
            Dataset deletes,
            boolean lookUpUnseenKeys,
            long limit,
            int batchRows,
            int readahead,
            TailCursor cursor,
            boolean more,
            List<AutoCloseable> resources) {
        super(allocator);
        this.allocator = allocator;
        this.schema = schema;
        this.limit = limit;
        this.batchRows = batchRows;
        this.cursor = cursor;
        this.more = more;
        this.resources = resources;
        this.assembler = new BatchAssembler(schema, tail);
        this.survivors = new StreamSurvivors(pending, base, deletes, lookUpUnseenKeys, batchRows);
        this.passes = new StreamPasses(
                passes, generations, base, deletes, pending, survivors, assembler, batchRows, readahead);
    }

    /** Where a reader stands once it has read this answer to its end: tail from it next. */
    public TailCursor cursor() {
        return cursor;
    }

    /** A tail only: some partition had more offsets than one answer covers; tail again at once. */
    public boolean more() {
        return more;
    }

    /** Rows handed out so far. */
    public long rowsRead() {
        return delivered;
    }

    /** Indexed lookups of the base this answer needed so far (keys of pending rows the base passes did not see). */
    public long baseLookups() {
        return survivors.lookups();
    }

    /** Takes of base rows by row id this answer ran so far (rows of keys that moved across partitions). */
    public long baseTakes() {
        return survivors.takes();
    }

    @Override
    public boolean loadNextBatch() throws IOException {
        ensureInitialized(); // a caller may load before it asks for the root
        try {
            while (limit == 0 || delivered < limit) {
                if (!passes.isOpen()) {
                    if (!passes.openNext()) {
                        return false;
                    }
                    keptFrom = 0;
                }
                if (passes.keptColumns() != null ? nextFromKeptColumns() : nextFromScan()) {
                    return true;
                }
            }
            return false;
        } catch (RolloutTableException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new RolloutTableException("Table read failed: " + e.getMessage(), e);
        }
    }

    /** The next batch of the open pass's kept columns; false when it made none (the pass ended, or kept no row). */
    private boolean nextFromKeptColumns() throws IOException {
        PendingKeys.GenerationRows rows = passes.generationRows();
        if (keptFrom >= rows.size()) {
            passes.endPass(true);
            return false;
        }
        int to = Math.min(rows.size(), keptFrom + batchRows);
        RowSelection kept = survivors.selectPending(rows, passes.current().keep(), keptFrom, to, row -> row);
        keptFrom = to;
        if (kept.size() == 0) {
            return false;
        }
        cutToLimit(kept);
        emit(passes.keptColumns()::get, false, kept);
        return true;
    }

    /** The next batch of the open pass's scan; false when it made none (the pass ended, or kept no row). */
    private boolean nextFromScan() throws IOException {
        if (!passes.reader().loadNextBatch()) {
            passes.endPass(true);
            return false;
        }
        VectorSchemaRoot batch = passes.reader().getVectorSchemaRoot();
        Keep keep = passes.current().keep();
        if (keep == Keep.MARK) {
            survivors.mark(batch);
            return false;
        }
        if (keep == Keep.UNREPLACED) {
            RowRuns runs = survivors.unreplaced(batch);
            if (runs.rows() == 0) {
                return false;
            }
            if (limit > 0 && delivered + runs.rows() > limit) {
                runs.truncate((int) (limit - delivered));
            }
            boolean whole = runs.rows() == batch.getRowCount();
            assembler.fill(getVectorSchemaRoot(), batch::getVector, whole, runs.rows(), runs::copy, k -> false);
            delivered += runs.rows();
            return true;
        }
        RowSelection kept;
        if (keep == Keep.ALL) {
            kept = RowSelection.all(batch.getRowCount());
        } else if (passes.current().deletes()) {
            kept = survivors.selectDeletes(batch, keep);
        } else if (passes.current().base()) {
            kept = survivors.selectBase(batch, keep);
        } else {
            BaseIntVector addresses = (BaseIntVector) batch.getVector(PendingKeys.ROW_ADDRESS);
            PendingKeys.GenerationRows rows = passes.generationRows();
            kept = survivors.selectPending(
                    rows, keep, 0, batch.getRowCount(), i -> rows.row(addresses.getValueAsLong(i)));
        }
        if (kept.size() == 0) {
            return false;
        }
        cutToLimit(kept);
        emit(batch::getVector, kept.size() == batch.getRowCount(), kept);
        return true;
    }

    private void cutToLimit(RowSelection kept) {
        if (limit > 0 && delivered + kept.size() > limit) {
            kept.truncate((int) (limit - delivered));
        }
    }

    /**
     * The kept rows as this reader's next batch, straight into its root (the caller is done with its previous batch):
     * no batch of its own unloaded and loaded again, whose buffer bookkeeping costs as much as a two-column batch's
     * check.
     */
    private void emit(Function<String, FieldVector> source, boolean whole, RowSelection kept) throws IOException {
        assembler.fill(getVectorSchemaRoot(), source, whole, kept.size(), kept::copy, kept::delete);
        delivered += kept.size();
    }

    @Override
    public long bytesRead() {
        return 0;
    }

    @Override
    protected void closeReadSource() throws IOException {
        try {
            passes.close();
        } finally {
            for (AutoCloseable resource : resources) {
                try {
                    resource.close();
                } catch (Exception e) {
                    // closing what a finished read held: nothing to do about it
                }
            }
        }
    }

    @Override
    public void close() throws IOException {
        try {
            super.close();
        } finally {
            allocator.close();
        }
    }

    @Override
    protected Schema readSchema() {
        return schema;
    }
}
