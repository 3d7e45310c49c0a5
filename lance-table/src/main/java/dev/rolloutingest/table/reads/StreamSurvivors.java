package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.reads.StreamPass.Keep;
import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntUnaryOperator;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Which rows of a {@link RowStream}'s passes survive the pending rows ({@link NewestWins}): a base row unless a newer
 * pending row replaces its key; a pending row only when it is the newest pending row of its key and the base holds no
 * newer one (a key moved across partitions), which the base passes saw, or else an indexed lookup of the batch's keys
 * tells. Holds what the base passes learned for the pending passes after them.
 *
 * <p>Over 300 lines because every way a pass meets a pending key (marked, matched by hash, selected, looked up, taken
 * by row id) reads and updates the same sets of seen and newer keys, which a split would have to share.
 */
final class StreamSurvivors {
    /** The column lance adds with {@code withRowId}: the id {@code takeRows} reads a row by. */
    private static final String ROW_ID = "_rowid";

    private final PendingKeys pending;
    private final Dataset base;
    /** The deletes kept beside the base; null when there are none. */
    private final Dataset deletes;

    private final boolean lookUpUnseenKeys;
    private final int batchRows;
    private final Set<String> seenInBase = new HashSet<>();
    private final Set<String> newerInBase = new HashSet<>();
    /** Row ids of base rows of pending keys whose order the unreplaced pass could not tell (at most one a key). */
    private final Map<String, Long> heldBack = new HashMap<>();
    /** Row ids of held-back base rows newer than their pending rows, read by a take once the pass is done. */
    private final List<Long> newerBaseRows = new ArrayList<>();

    private boolean markedEveryPendingKey;
    private long lookups;
    private long takes;

    StreamSurvivors(PendingKeys pending, Dataset base, Dataset deletes, boolean lookUpUnseenKeys, int batchRows) {
        this.pending = pending;
        this.base = base;
        this.deletes = deletes;
        this.lookUpUnseenKeys = lookUpUnseenKeys;
        this.batchRows = batchRows;
    }

    /** Indexed lookups of the base so far (keys of pending rows the base passes did not see). */
    long lookups() {
        return lookups;
    }

    /** Takes of base rows by row id so far (rows of keys that moved across partitions). */
    long takes() {
        return takes;
    }

    /** Whether base rows held back by the unreplaced pass and newer than their pending rows are still to be read. */
    boolean hasNewerBaseRows() {
        return !newerBaseRows.isEmpty();
    }

    /** The next (up to a batch of) held-back base rows newer than their pending rows, taken by row id. */
    ArrowReader takeNewerBaseRows(List<String> columns) throws IOException {
        List<Long> rows = newerBaseRows.subList(0, Math.min(newerBaseRows.size(), batchRows));
        ArrowReader taken = base.takeRows(new ArrayList<>(rows), columns);
        takes++;
        rows.clear();
        return taken;
    }

    /**
     * The keys whose base row is newer than their newest pending row, as a filter; null when there is none (the usual
     * case: no key moved across partitions).
     */
    String newerInBaseFilter() {
        return newerInBase.isEmpty() ? null : Filters.recordIdInOneList(newerInBase);
    }

    /** The unreplaced pass read every base row: with the pass of possible deletes after it, every base row is seen. */
    void everyPendingKeyMarked() {
        markedEveryPendingKey = true;
    }

    /** Notes which base rows of pending keys are newer than the key's newest pending row; every such row is seen. */
    void mark(VectorSchemaRoot batch) {
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        for (int i = 0; i < batch.getRowCount(); i++) {
            String key = ids.getObject(i).toString();
            NewestWins.Order replacement = pending.newest(key);
            if (replacement != null) {
                seenInBase.add(key);
                if (replacement.sameRow(order(batch, i))) {
                    continue; // the pending pass shows it: see selectBase
                }
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
    RowRuns unreplaced(VectorSchemaRoot batch) {
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
    void resolveHeldBack() throws IOException {
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

    /** Drops what a pass held back: resolved, or the pass did not read to its end. */
    void forgetHeldBack() {
        heldBack.clear();
    }

    /**
     * Base rows shown: the pass's kind of row, unless a newer pending row replaces its key or the key's newest pending
     * row is this same row (the pending pass shows it). A base row of the other
     * kind is not shown but still hides its key's older pending rows (a scan's pass of possible deletes shows none).
     */
    RowSelection selectBase(VectorSchemaRoot batch, Keep keep) {
        RowSelection kept = new RowSelection(batch.getRowCount());
        VarCharVector ids = pending.isEmpty() ? null : (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        for (int i = 0; i < batch.getRowCount(); i++) {
            boolean delete = Tombstones.is(batch, i);
            boolean shown = keep.takes(delete);
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
                    NewestWins.Order order = order(batch, i);
                    if (replacement.replaces(order) || replacement.sameRow(order)) {
                        // a newer pending row; or the same row, committed by a round whose marks are not (yet): the
                        // pending pass shows it within its offsets, where a tail's range of the base leaves it out
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
     * Rows of the deletes kept beside the base, as {@link #selectBase} takes base rows; a delete shown (a tail) also
     * gives way to a newer value of its key in the base (a put merged after it) or a newer delete of it beside the base
     * (deleted again): then it is no longer the key's newest row. Lookups of the shown keys tell.
     */
    RowSelection selectDeletes(VectorSchemaRoot batch, Keep keep) {
        RowSelection kept = selectBase(batch, keep);
        if (kept.size() == 0 || !keep.takes(true)) {
            return kept;
        }
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        Map<String, NewestWins.Order> shown = new HashMap<>(); // per key its newest delete in the batch
        kept.removeIf((index, position) -> {
            NewestWins.Order order = order(batch, index);
            shown.merge(ids.getObject(index).toString(), order, (a, b) -> b.replaces(a) ? b : a);
            return false;
        });
        Set<String> replaced = newerIn(base, shown);
        replaced.addAll(newerIn(deletes, shown)); // a later delete of the key, kept beside the base too
        kept.removeIf((index, position) -> {
            String key = ids.getObject(index).toString();
            return replaced.contains(key) || !shown.get(key).sameRow(order(batch, index));
        });
        return kept;
    }

    /**
     * Pending rows shown, of the rows {@code [from, to)} of the source vectors (the generation's row {@code rowAt(i)}
     * each): the newest pending row of its key, unless the base holds a newer one.
     */
    RowSelection selectPending(
            PendingKeys.GenerationRows generationRows, Keep keep, int from, int to, IntUnaryOperator rowAt) {
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
            if (!keep.takes(delete)) {
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

    /**
     * Keys whose row in the base, or in the deletes beside it, is newer than their newest pending row: indexed
     * lookups, 256 keys each.
     */
    private Set<String> newerInBaseByLookup(Set<String> keys) {
        Map<String, NewestWins.Order> newest = new HashMap<>();
        keys.forEach(key -> newest.put(key, pending.newest(key)));
        Set<String> newer = newerIn(base, newest);
        if (deletes != null) {
            newer.addAll(newerIn(deletes, newest));
        }
        return newer;
    }

    /** Keys whose row in {@code dataset} is newer than the order given for them: indexed lookups, 256 keys each. */
    private Set<String> newerIn(Dataset dataset, Map<String, NewestWins.Order> than) {
        Set<String> newer = new HashSet<>();
        for (String in : Filters.recordIdIn(new ArrayList<>(than.keySet()))) {
            lookups++;
            try (LanceScanner lookup = dataset.newScan(new ScanOptions.Builder()
                            .columns(PendingKeys.ORDER_COLUMNS)
                            .filter(in)
                            .build());
                    ArrowReader rows = lookup.scanBatches()) {
                while (rows.loadNextBatch()) {
                    VectorSchemaRoot batch = rows.getVectorSchemaRoot();
                    VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                    for (int i = 0; i < batch.getRowCount(); i++) {
                        String key = ids.getObject(i).toString();
                        if (order(batch, i).replaces(than.get(key))) {
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
}
