package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.reads.StreamPass.Keep;
import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.IntUnaryOperator;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
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

    /** The column lance adds with {@code withRowId}: the id {@code takeRows} reads a row by. */
    private static final String ROW_ID = "_rowid";

    private final BufferAllocator allocator;
    private final Schema schema;
    private final BatchAssembler assembler;
    private final List<StreamPass> passes;
    private final Function<GenerationCatalog.Listed, DatasetHandles.Lease> generations;
    private final PendingKeys pending;
    private final Dataset base;
    private final boolean lookUpUnseenKeys;
    private final long limit;
    private final int batchRows;
    private final int readahead;
    private final TailCursor cursor;
    private final boolean more;
    private final List<AutoCloseable> resources;
    private final Set<String> seenInBase = new HashSet<>();
    private final Set<String> newerInBase = new HashSet<>();
    /** Row ids of base rows of pending keys whose order the unreplaced pass could not tell (at most one a key). */
    private final Map<String, Long> heldBack = new HashMap<>();
    /** Row ids of held-back base rows newer than their pending rows, read by a take once the pass is done. */
    private final List<Long> newerBaseRows = new ArrayList<>();

    private boolean markedEveryPendingKey;

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
    private long lookups;
    private long takes;

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
        this.lookUpUnseenKeys = lookUpUnseenKeys;
        this.limit = limit;
        this.batchRows = batchRows;
        this.readahead = readahead;
        this.cursor = cursor;
        this.more = more;
        this.resources = resources;
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
        return lookups;
    }

    /** Takes of base rows by row id this answer ran so far (rows of keys that moved across partitions). */
    public long baseTakes() {
        return takes;
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
                    RowSelection kept = selectPending(keptFrom, to, row -> row);
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
                    mark(batch);
                    continue;
                }
                if (current.keep() == Keep.UNREPLACED) {
                    RowRuns runs = unreplaced(batch);
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
                    kept = selectBase(batch);
                } else {
                    BaseIntVector addresses = (BaseIntVector) batch.getVector(PendingKeys.ROW_ADDRESS);
                    kept = selectPending(0, batch.getRowCount(), i -> generationRows.row(addresses.getValueAsLong(i)));
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
        if (!newerBaseRows.isEmpty()) {
            // base rows held back in the unreplaced pass that are newer than their key's pending rows
            List<Long> rows = newerBaseRows.subList(0, Math.min(newerBaseRows.size(), batchRows));
            current = new StreamPass(null, null, Keep.ALL);
            reader = base.takeRows(new ArrayList<>(rows), assembler.presentIn(base));
            takes++;
            rows.clear();
            return true;
        }
        if (next >= passes.size()) {
            return false;
        }
        current = passes.get(next++);
        String filter = current.filter();
        if (current.onlyNewerInBase()) {
            if (newerInBase.isEmpty()) {
                current = null;
                return openNextPass(); // the usual case: no key moved across partitions
            }
            String keys = Filters.recordIdInOneList(newerInBase);
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
            markedEveryPendingKey = true; // with the pass of possible deletes after it, every base row is seen
        }
        try {
            if (reader != null) {
                reader.close();
            }
            if (scanner != null) {
                scanner.close();
            }
            if (unreplaced) {
                resolveHeldBack();
            }
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IOException(e);
        } finally {
            heldBack.clear();
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

    /** Notes which base rows of pending keys are newer than the key's newest pending row; every such row is seen. */
    private void mark(VectorSchemaRoot batch) {
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        for (int i = 0; i < batch.getRowCount(); i++) {
            String key = ids.getObject(i).toString();
            NewestWins.Order replacement = pending.newest(key);
            if (replacement != null) {
                seenInBase.add(key);
                if (!replacement.replaces(order(batch, i))) {
                    newerInBase.add(key);
                }
            }
        }
        markedEveryPendingKey = true;
    }

    /**
     * The rows of a base batch no newer pending row replaces, as runs: a key is made a String only when its hash
     * matches a pending key's (about one row in a hundred at 1 % pending).
     */
    private RowRuns unreplaced(VectorSchemaRoot batch) {
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        int rows = batch.getRowCount();
        RowRuns kept = new RowRuns();
        if (rows == 0) {
            return kept; // its buffers may be empty
        }
        UInt8Vector rowIds = (UInt8Vector) batch.getVector(ROW_ID);
        IntVector partitions = (IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION);
        BigIntVector offsetsInLog = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
        // one bounds check for the batch, then reads by address: checked reads cost more than the hash itself
        ArrowBuf offsets = ids.getOffsetBuffer();
        ArrowBuf data = ids.getDataBuffer();
        if (offsets.capacity() < (long) (rows + 1) * BaseVariableWidthVector.OFFSET_WIDTH) {
            throw new IllegalStateException("a record_id batch of " + rows + " rows has too few offsets");
        }
        long offsetsAt = offsets.memoryAddress();
        long dataAt = data.memoryAddress();
        long dataBytes = data.capacity();
        int from = 0;
        int end = MemoryUtil.getInt(offsetsAt);
        for (int i = 0; i < rows; i++) {
            int start = end;
            end = MemoryUtil.getInt(offsetsAt + (long) (i + 1) * BaseVariableWidthVector.OFFSET_WIDTH);
            if (start < 0 || end < start || end > dataBytes) {
                throw new IllegalStateException("record_id offsets out of bounds at row " + i);
            }
            if (!pending.mayHold(dataAt + start, end - start)) {
                continue;
            }
            String key = ids.getObject(i).toString();
            NewestWins.Order replacement = pending.newest(key);
            if (replacement == null) {
                continue; // another key with the same hash
            }
            if (!NewestWins.offsetsDecide(replacement.partition(), partitions.get(i))) {
                heldBack.put(key, rowIds.get(i)); // ordered by ingest time: resolved after the pass
            } else if (!NewestWins.replacesInPartition(replacement.offset(), offsetsInLog.get(i))) {
                newerInBase.add(key); // the same partition: its offset says the base row is as new
                continue;
            }
            kept.add(from, i - from);
            from = i + 1;
        }
        kept.add(from, rows - from);
        return kept;
    }

    /**
     * Orders the base rows the unreplaced pass held back (a pending key's base row of another partition) by their
     * ingest time, read by row id: a row newer than its key's newest pending row is read again in full and shown (by
     * a take after this pass), and the pending rows of its key are not.
     */
    private void resolveHeldBack() throws IOException {
        List<Long> held = new ArrayList<>(heldBack.values());
        for (int from = 0; from < held.size(); from += batchRows) {
            List<Long> rows = held.subList(from, Math.min(held.size(), from + batchRows));
            takes++;
            try (ArrowReader taken = base.takeRows(new ArrayList<>(rows), PendingKeys.ORDER_COLUMNS)) {
                while (taken.loadNextBatch()) {
                    VectorSchemaRoot batch = taken.getVectorSchemaRoot();
                    VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                    for (int i = 0; i < batch.getRowCount(); i++) {
                        String key = ids.getObject(i).toString();
                        if (!pending.newest(key).replaces(order(batch, i))) {
                            newerInBase.add(key);
                            newerBaseRows.add(heldBack.get(key));
                        }
                    }
                }
            }
        }
    }

    /**
     * Base rows shown: the pass's kind of row, unless a newer pending row replaces its key. A base row of the other
     * kind is not shown but still hides its key's older pending rows (a scan's pass of possible deletes shows none).
     */
    private RowSelection selectBase(VectorSchemaRoot batch) {
        RowSelection kept = new RowSelection(batch.getRowCount());
        VarCharVector ids = pending.isEmpty() ? null : (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        for (int i = 0; i < batch.getRowCount(); i++) {
            boolean delete = Tombstones.is(batch, i);
            boolean shown = current.keep().takes(delete);
            if (!shown && ids == null) {
                continue;
            }
            if (ids != null) {
                String key = ids.getObject(i).toString();
                NewestWins.Order replacement = pending.newest(key);
                if (replacement != null) {
                    if (shown) {
                        seenInBase.add(key);
                    }
                    if (replacement.replaces(order(batch, i))) {
                        continue;
                    }
                    newerInBase.add(key);
                }
            }
            if (shown) {
                kept.add(i, delete);
            }
        }
        return kept;
    }

    /**
     * Pending rows shown, of the rows {@code [from, to)} of the source vectors (the generation's row {@code rowAt(i)}
     * each): the newest pending row of its key, unless the base holds a newer one.
     */
    private RowSelection selectPending(int from, int to, IntUnaryOperator rowAt) {
        RowSelection kept = new RowSelection(to - from);
        Map<String, Integer> unseen = new HashMap<>();
        List<String> keys = new ArrayList<>();
        for (int i = from; i < to; i++) {
            int row = rowAt.applyAsInt(i);
            String key = generationRows.key(row);
            NewestWins.Order newest = pending.newest(key);
            if (newest == null || !newest.sameRow(generationRows.order(row)) || newerInBase.contains(key)) {
                continue;
            }
            boolean delete = generationRows.delete(row);
            if (!current.keep().takes(delete)) {
                continue;
            }
            if (lookUpUnseenKeys && !markedEveryPendingKey && !seenInBase.contains(key)) {
                unseen.put(key, i);
            }
            kept.add(i, delete);
            keys.add(key);
        }
        if (!unseen.isEmpty()) {
            Set<String> newer = newerInBaseByLookup(unseen.keySet());
            if (!newer.isEmpty()) {
                kept.removeIf((index, position) -> newer.contains(keys.get(position)));
            }
        }
        return kept;
    }

    /** Keys whose base row is newer than their newest pending row: indexed lookups, 256 keys each. */
    private Set<String> newerInBaseByLookup(Set<String> keys) {
        Set<String> newer = new HashSet<>();
        for (String in : Filters.recordIdIn(new ArrayList<>(keys))) {
            lookups++;
            try (LanceScanner lookup = base.newScan(new ScanOptions.Builder()
                            .columns(PendingKeys.ORDER_COLUMNS)
                            .filter(in)
                            .build());
                    ArrowReader rows = lookup.scanBatches()) {
                while (rows.loadNextBatch()) {
                    VectorSchemaRoot batch = rows.getVectorSchemaRoot();
                    VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                    for (int i = 0; i < batch.getRowCount(); i++) {
                        String key = ids.getObject(i).toString();
                        if (order(batch, i).replaces(pending.newest(key))) {
                            newer.add(key);
                        }
                    }
                }
            } catch (RolloutTableException e) {
                throw e;
            } catch (Exception e) {
                throw new RolloutTableException("Table read failed looking up base rows: " + e.getMessage(), e);
            }
        }
        return newer;
    }

    /** Where row {@code i} of a batch with the order columns sits in {@link NewestWins}' order. */
    private static NewestWins.Order order(VectorSchemaRoot batch, int i) {
        return new NewestWins.Order(
                ((IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION)).get(i),
                ((BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET)).get(i),
                ((TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT)).get(i));
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
