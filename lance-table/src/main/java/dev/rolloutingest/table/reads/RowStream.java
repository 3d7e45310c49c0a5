package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.reads.StreamPass.Keep;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * The answer of a scan or a tail: Arrow batches of the newest value of each key (and, for a tail, its deletes) read
 * while the caller consumes them, and the cursor of what it holds. Never materialized: it holds one batch of lance's
 * and one of its own (plus lance's read-ahead), whatever the result size. Close it to release the table's view.
 *
 * <p>It runs passes, one scan each: first over the base (values and, for a tail, deletes), then over each pending
 * generation. A base row whose key a newer pending row replaces ({@link NewestWins}) is skipped; a pending row is kept only when it is the
 * newest pending row of its key and the base holds no newer one (a key moved across partitions), which the base passes
 * saw, or else an indexed lookup of the batch's keys tells.
 */
public final class RowStream extends ArrowReader {
    /** The column a tail adds: true for a delete (its other values are those of the delete row, empty). */
    public static final String DELETED = "_deleted";

    private final BufferAllocator allocator;
    private final Schema schema;
    private final BatchAssembler assembler;
    private final List<StreamPass> passes;
    private final Function<GenerationCatalog.Listed, DatasetHandles.Lease> generations;
    private final PendingKeys pending;
    private final Dataset base;
    private final long limit;
    private final int batchRows;
    private final int readahead;
    private final TailCursor cursor;
    private final boolean more;
    private final List<AutoCloseable> resources;
    private final StreamSurvivors survivors;

    private int next;
    private StreamPass current;
    private DatasetHandles.Lease lease;
    /** The current generation pass's kept keys, orders and delete marks. */
    private PendingKeys.GenerationRows generationRows;
    /** The current generation pass's columns kept with its handle (null: it scans), and its next row. */
    private Map<String, FieldVector> keptColumns;

    private int keptFrom;

    private LanceScanner scanner;
    private ArrowReader reader;
    private long delivered;

    RowStream(
            BufferAllocator allocator,
            Schema schema,
            boolean tail,
            List<StreamPass> passes,
            Function<GenerationCatalog.Listed, DatasetHandles.Lease> generations,
            PendingKeys pending,
            Dataset base,
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
        this.assembler = new BatchAssembler(schema, tail);
        this.passes = passes;
        this.generations = generations;
        this.pending = pending;
        this.base = base;
        this.limit = limit;
        this.batchRows = batchRows;
        this.readahead = readahead;
        this.cursor = cursor;
        this.more = more;
        this.resources = resources;
        this.survivors = new StreamSurvivors(pending, base, lookUpUnseenKeys, batchRows);
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
                if (reader == null && keptColumns == null && !openNextPass()) {
                    return false;
                }
                if (keptColumns != null) {
                    if (keptFrom >= generationRows.size()) {
                        closePass(true);
                        continue;
                    }
                    int to = Math.min(generationRows.size(), keptFrom + batchRows);
                    RowSelection kept =
                            survivors.selectPending(generationRows, current.keep(), keptFrom, to, row -> row);
                    keptFrom = to;
                    if (kept.size() == 0) {
                        continue;
                    }
                    if (limit > 0 && delivered + kept.size() > limit) {
                        kept.truncate((int) (limit - delivered));
                    }
                    emit(keptColumns::get, false, kept);
                    delivered += kept.size();
                    return true;
                }
                if (!reader.loadNextBatch()) {
                    closePass(true);
                    continue;
                }
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                if (current.keep() == Keep.MARK) {
                    survivors.mark(batch);
                    continue;
                }
                if (current.keep() == Keep.UNREPLACED) {
                    RowRuns runs = survivors.unreplaced(batch);
                    if (runs.rows() == 0) {
                        continue;
                    }
                    if (limit > 0 && delivered + runs.rows() > limit) {
                        runs.truncate((int) (limit - delivered));
                    }
                    assembler.fill(
                            getVectorSchemaRoot(),
                            batch::getVector,
                            runs.rows() == batch.getRowCount(),
                            runs.rows(),
                            runs::copy,
                            k -> false);
                    delivered += runs.rows();
                    return true;
                }
                RowSelection kept;
                if (current.keep() == Keep.ALL) {
                    kept = RowSelection.all(batch.getRowCount());
                } else if (current.base()) {
                    kept = survivors.selectBase(batch, current.keep());
                } else {
                    BaseIntVector addresses = (BaseIntVector) batch.getVector(PendingKeys.ROW_ADDRESS);
                    kept = survivors.selectPending(
                            generationRows,
                            current.keep(),
                            0,
                            batch.getRowCount(),
                            i -> generationRows.row(addresses.getValueAsLong(i)));
                }
                if (kept.size() == 0) {
                    continue;
                }
                if (limit > 0 && delivered + kept.size() > limit) {
                    kept.truncate((int) (limit - delivered));
                }
                emit(batch::getVector, kept.size() == batch.getRowCount(), kept);
                delivered += kept.size();
                return true;
            }
            return false;
        } catch (RolloutTableException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new RolloutTableException("Table read failed: " + e.getMessage(), e);
        }
    }

    private boolean openNextPass() throws IOException {
        if (survivors.hasNewerBaseRows()) {
            // base rows held back in the unreplaced pass that are newer than their key's pending rows
            current = new StreamPass(null, null, Keep.ALL);
            reader = survivors.takeNewerBaseRows(assembler.presentIn(base));
            return true;
        }
        if (next >= passes.size()) {
            return false;
        }
        current = passes.get(next++);
        String filter = current.filter();
        if (current.onlyNewerInBase()) {
            String keys = survivors.newerInBaseFilter();
            if (keys == null) {
                current = null;
                return openNextPass(); // the usual case: no key moved across partitions
            }
            filter = filter == null ? keys : filter + " AND (" + keys + ")";
        }
        Dataset dataset = base;
        if (!current.base()) {
            lease = generations.apply(current.generation());
            dataset = lease.dataset();
        }
        Set<String> projection = new LinkedHashSet<>();
        if (current.keep() != Keep.MARK) {
            projection.addAll(assembler.presentIn(dataset));
        }
        if (!current.base()) {
            try {
                // a generation's keys, orders and delete marks are kept with its handle: found by each row's address
                generationRows = lease.rows();
                if (filter == null) {
                    // every row of the generation: copied from its columns kept with the handle, no lance scan
                    keptColumns = lease.columns(new ArrayList<>(projection));
                    if (keptColumns != null) {
                        keptFrom = 0;
                        return true;
                    }
                }
            } catch (RuntimeException e) {
                lease.close();
                lease = null;
                throw e;
            }
            if (projection.isEmpty()) {
                projection.add(RolloutSchema.RECORD_ID);
            }
        } else if (current.keep() == Keep.UNREPLACED) {
            projection.add(RolloutSchema.RECORD_ID);
            projection.add(RolloutSchema.SOURCE_PARTITION);
            projection.add(RolloutSchema.SOURCE_OFFSET);
        } else if (current.keep() == Keep.MARK) {
            projection.addAll(PendingKeys.ORDER_COLUMNS);
        } else if (current.keep() != Keep.ALL) {
            projection.add(RolloutSchema.EXPERIMENT); // with metadata: tells a delete row
            projection.add(RolloutSchema.METADATA);
            if (!pending.isEmpty()) {
                projection.addAll(PendingKeys.ORDER_COLUMNS);
            }
        }
        ScanOptions.Builder options = new ScanOptions.Builder()
                .columns(new ArrayList<>(projection))
                .withRowAddress(!current.base())
                .withRowId(current.keep() == Keep.UNREPLACED)
                .batchSize(batchRows)
                .batchReadahead(readahead)
                // a filter naming thousands of keys: a hash set over the column costs one read of it, the record_id
                // index one lookup per key (~0.1 ms each)
                .useScalarIndex(!current.namesKeys() || current.onlyNewerInBase());
        if (filter != null) {
            options.filter(filter);
        }
        scanner = dataset.newScan(options.build());
        reader = scanner.scanBatches();
        return true;
    }

    /** Ends the current pass; {@code finished}: it read all its rows (else the answer is closed early, by a limit). */
    private void closePass(boolean finished) throws IOException {
        boolean unreplaced = finished && current.keep() == Keep.UNREPLACED;
        if (unreplaced) {
            survivors.everyPendingKeyMarked();
        }
        try {
            if (reader != null) {
                reader.close();
            }
            if (scanner != null) {
                scanner.close();
            }
            if (unreplaced) {
                survivors.resolveHeldBack();
            }
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException(e);
        } finally {
            survivors.forgetHeldBack();
            if (lease != null) {
                lease.close();
                lease = null;
                generationRows = null;
                keptColumns = null;
            }
            reader = null;
            scanner = null;
            current = null;
        }
    }

    /**
     * The kept rows as this reader's next batch, straight into its root (the caller is done with its previous batch):
     * no batch of its own unloaded and loaded again, whose buffer bookkeeping costs as much as a two-column batch's
     * check.
     */
    private void emit(Function<String, FieldVector> source, boolean whole, RowSelection kept) throws IOException {
        assembler.fill(getVectorSchemaRoot(), source, whole, kept.size(), kept::copy, kept::delete);
    }

    @Override
    public long bytesRead() {
        return 0;
    }

    @Override
    protected void closeReadSource() throws IOException {
        try {
            if (reader != null || keptColumns != null) {
                closePass(false);
            } else if (lease != null) {
                lease.close();
            }
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
