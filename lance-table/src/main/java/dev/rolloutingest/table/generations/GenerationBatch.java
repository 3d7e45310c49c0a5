package dev.rolloutingest.table.generations;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.AddedValues;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.RowWriter;
import dev.rolloutingest.table.rows.Timestamps;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.avro.Schema;
import org.apache.avro.io.Decoder;

/**
 * The rows of one partition waiting to be sealed, held as Arrow columns of the table's schema from the
 * moment they are accepted. Converting at accept time means a value the table cannot represent is refused
 * with its record (and can be dead-lettered at once) instead of failing the whole batch at seal time, and
 * the seal writes these columns as they are, without a second copy.
 *
 * <p>Not thread-safe: one owner at a time (the partition's processor, then the writer it hands it to).
 *
 * <p>Over 300 lines because the batch owns its columns: staging a row, the added columns, selecting rows and the
 * sealed view all touch them.
 */
public final class GenerationBatch implements AutoCloseable {
    private final BufferAllocator allocator;
    private final VectorSchemaRoot root;
    private final RowWriter writer;
    /** The table's column of a name among those producers added, or null: what an added field must fit. */
    private final Function<String, Field> tableColumn;
    /** Columns of fields producers added (beyond the contract), in the order first met. */
    private final Map<String, FieldVector> added = new LinkedHashMap<>();
    /** The column each added Avro field (by identity) writes into, once found and checked. */
    private final Map<Schema.Field, FieldVector> addedByField = new IdentityHashMap<>();

    private final List<String> recordIds = new ArrayList<>();
    private long[] offsets = new long[64];
    private int size;
    private final BatchSizing sizing;
    /** A row decoded into the columns at index {@code size()} but not yet part of the batch. */
    private RowWriter.Staged staged;

    private final Consumer<RowWriter.Staged> stagedByColumns = row -> staged = row;
    private boolean closed;

    public GenerationBatch(BufferAllocator allocator, Function<String, Field> tableColumn) {
        this(allocator, tableColumn, null);
    }

    /**
     * A batch whose columns start at the sizes {@code sizing} learnt from the table's last sealed batch, and teach it
     * this one's when it is sealed; null starts from Arrow's defaults.
     */
    public GenerationBatch(BufferAllocator allocator, Function<String, Field> tableColumn, BatchSizing sizing) {
        this.allocator = allocator;
        this.tableColumn = tableColumn;
        this.sizing = sizing;
        this.root = VectorSchemaRoot.create(RolloutSchema.SCHEMA, allocator);
        if (sizing != null) {
            sizing.presize(root);
        }
        this.root.allocateNew();
        this.writer = new RowWriter(root);
    }

    /** A table-independent batch (tests, the bench); the caller closes both. */
    public static GenerationBatch create(BufferAllocator allocator) {
        return new GenerationBatch(allocator, name -> null);
    }

    /**
     * Appends a row. A rollout the table cannot represent is refused with {@link RolloutTableException.Unrepresentable}
     * and leaves the batch as it was.
     */
    public void append(Rollout rollout, int sourcePartition, long sourceOffset, Instant ingestedAt) {
        requireOpen();
        String reason = ArrowRows.unrepresentable(rollout);
        if (reason != null) {
            throw new RolloutTableException.Unrepresentable(rollout.getRecordId(), sourceOffset, reason);
        }
        requireAscending(sourceOffset);
        staged = null;
        writer.write(size, rollout, sourcePartition, sourceOffset, ingestedAt);
        push(sourceOffset, rollout.getRecordId());
    }

    /** Fails unless a row at {@code sourceOffset} may follow the batch's last row. */
    public void requireAscending(long sourceOffset) {
        if (size > 0 && sourceOffset <= offsets[size - 1]) {
            throw new IllegalArgumentException(
                    "offset " + sourceOffset + " is not above the batch's last " + offsets[size - 1]);
        }
    }

    private void push(long sourceOffset, String recordId) {
        if (size == offsets.length) {
            offsets = Arrays.copyOf(offsets, size * 2);
        }
        offsets[size] = sourceOffset;
        recordIds.add(recordId);
        size++;
    }

    /**
     * The reader that stages one record's row (as {@link #stage}) for a value deserializer: from the value's Avro
     * encoding, or written straight into the columns by a decoder that reads the contract off its own bytes.
     */
    public FieldReader<RowWriter.Staged> rowReader(int sourcePartition, long sourceOffset, Instant ingestedAt) {
        return new FieldReader<>() {
            @Override
            public RowWriter.Staged read(Decoder in, Schema.Field[] order) throws IOException {
                return stage(in, order, sourcePartition, sourceOffset, ingestedAt);
            }

            @Override
            public Columns<RowWriter.Staged> columns() {
                startStaging(sourceOffset);
                return writer.columns(
                        size, sourcePartition, sourceOffset, Timestamps.micros(ingestedAt), stagedByColumns);
            }
        };
    }

    private void startStaging(long sourceOffset) {
        requireOpen();
        requireAscending(sourceOffset);
        staged = null;
        // a row refused half-way may have left values in added columns this row does not carry
        added.values().forEach(v -> AddedValues.clear(v, size));
    }

    /**
     * Decodes one Avro-encoded rollout (its fields read from {@code in} in {@code order}, see
     * {@code FieldReader}) straight into the next row's columns. The row joins the batch only on
     * {@link #commitStaged}; a row not committed (the record is dead-lettered) is overwritten by the next.
     */
    public RowWriter.Staged stage(
            Decoder in, Schema.Field[] order, int sourcePartition, long sourceOffset, Instant ingestedAt)
            throws IOException {
        startStaging(sourceOffset);
        staged = writer.decode(
                size, in, order, sourcePartition, sourceOffset, Timestamps.micros(ingestedAt), this::decodeAdded);
        return staged;
    }

    /**
     * Decodes a field a producer added (beyond the contract) into its column: the table's column of that name
     * when there is one (the value must fit it: {@link AddedColumns#conflict}), else a new one. A field that
     * does not fit is refused with its record.
     */
    private void decodeAdded(int row, Decoder in, Schema.Field field) throws IOException {
        // A schema id's reader hands the same field object for every record: its column is found and checked once.
        FieldVector vector = addedByField.get(field);
        if (vector == null) {
            vector = columnFor(field);
            addedByField.put(field, vector);
        }
        AddedValues.write(vector, row, AddedValues.read(in, field.schema()));
    }

    /** The batch's column for an added field: the one it has, else the table's type, else the field's own. */
    private FieldVector columnFor(Schema.Field field) {
        return addedColumn(AddedColumns.columnFor(field));
    }

    /**
     * Writes the added columns in the base's types where a column came in a type Avro promotes to the base's
     * (the batch met the field before the base had it, e.g. an int field whose column another writer made long).
     */
    void conformTo(Map<String, Field> baseColumns) {
        requireOpen();
        for (Map.Entry<String, FieldVector> entry : new ArrayList<>(added.entrySet())) {
            Field column = baseColumns.get(entry.getKey());
            FieldVector mine = entry.getValue();
            if (column == null || AddedColumns.sameShape(column, mine.getField())) {
                continue;
            }
            FieldVector conformed = column.createVector(allocator);
            conformed.allocateNew();
            mine.setValueCount(size);
            for (int i = 0; i < size; i++) {
                AddedValues.write(conformed, i, AddedValues.valueAt(mine, i));
            }
            added.put(entry.getKey(), conformed);
            addedByField.clear(); // the fields find their columns again, should a row still be staged
            mine.close();
        }
    }

    /** The columns of fields producers added that this batch holds: the base gets them before it is written. */
    public List<Field> addedFields() {
        return added.values().stream().map(FieldVector::getField).toList();
    }

    /** Makes the row {@link #stage} decoded part of the batch. */
    public void commitStaged() {
        requireOpen();
        if (staged == null) {
            throw new IllegalStateException("no row staged");
        }
        push(staged.sourceOffset(), staged.recordId());
        staged = null;
    }

    /**
     * A string column of the contract (e.g. {@code experiment}) of the row {@link #stage} decoded and not yet
     * committed: what a route by field reads before the row goes to its table's batch.
     */
    public String stagedString(String column) {
        requireOpen();
        if (staged == null) {
            throw new IllegalStateException("no row staged");
        }
        root.setRowCount(size + 1);
        return ArrowRows.stringAt(root, column, size);
    }

    /**
     * Moves the row {@link #stage} decoded here into {@code target}'s next row and commits it there; this batch stays
     * as it was (a landing batch that only ever stages). Its added fields must fit {@code target}'s columns (and its
     * table's): otherwise it is refused with {@link AddedColumns#refused} and {@code target} is left as it was.
     */
    public void moveStagedTo(GenerationBatch target) {
        requireOpen();
        target.requireOpen();
        if (staged == null) {
            throw new IllegalStateException("no row staged");
        }
        target.requireAscending(staged.sourceOffset());
        int from = size;
        int to = target.size;
        // the added columns first: a refusal leaves the target untouched
        Map<FieldVector, FieldVector> carried = new LinkedHashMap<>();
        for (FieldVector column : added.values()) {
            column.setValueCount(from + 1);
            if (!column.isNull(from)) {
                carried.put(column, target.addedColumn(column.getField()));
            }
        }
        root.setRowCount(from + 1);
        for (int c = 0; c < root.getFieldVectors().size(); c++) {
            target.root.getVector(c).copyFromSafe(from, to, root.getVector(c));
        }
        target.added.values().forEach(v -> AddedValues.clear(v, to));
        carried.forEach((mine, theirs) -> AddedValues.write(theirs, to, AddedValues.valueAt(mine, from)));
        target.push(staged.sourceOffset(), staged.recordId());
        staged = null;
    }

    /** This batch's column for an added field: its own, else the table's type, else the field's; refused on a conflict. */
    private FieldVector addedColumn(Field wanted) {
        FieldVector vector = added.get(wanted.getName());
        Field column = vector != null ? vector.getField() : tableColumn.apply(wanted.getName());
        String conflict = column == null ? null : AddedColumns.conflict(column, wanted);
        if (conflict != null) {
            throw AddedColumns.refused(conflict);
        }
        if (vector == null) {
            vector = (column == null ? wanted : column).createVector(allocator);
            vector.allocateNew();
            added.put(wanted.getName(), vector);
        }
        return vector;
    }

    /** The experiment of the row at {@code index}, for log lines about one record. */
    public String experimentAt(int index) {
        requireOpen();
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException(index);
        }
        return ArrowRows.stringAt(root, RolloutSchema.EXPERIMENT, index);
    }

    public void append(RolloutRow row) {
        append(row.rollout(), row.sourcePartition(), row.sourceOffset(), row.ingestedAt());
    }

    public int size() {
        return size;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    /** Source offset of the row at {@code index}. */
    public long offsetAt(int index) {
        return offsets[index];
    }

    /** Off-heap bytes the columns hold now. */
    public long allocatedBytes() {
        return root.getFieldVectors().stream().mapToLong(v -> v.getBufferSize()).sum()
                + added.values().stream().mapToLong(FieldVector::getBufferSize).sum();
    }

    /**
     * A new batch without the rows at the given source offsets; this one stays as it is (the caller closes
     * it). Used to take rows out of a batch that cannot be written with them.
     */
    public GenerationBatch without(Set<Long> sourceOffsets) {
        requireOpen();
        List<Integer> kept = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            if (!sourceOffsets.contains(offsets[i])) {
                kept.add(i);
            }
        }
        return select(kept);
    }

    /** The rows in [from, to) as a new batch (for probing which rows a write refuses). */
    GenerationBatch slice(int from, int to) {
        List<Integer> kept = new ArrayList<>();
        for (int i = from; i < to; i++) {
            kept.add(i);
        }
        return select(kept);
    }

    private GenerationBatch select(List<Integer> indices) {
        GenerationBatch copy = new GenerationBatch(allocator, tableColumn);
        try {
            sealedRoot(); // value counts set, so copyFromSafe reads valid vectors
            // An added column goes along only where a kept row has a value: a row probed alone for a write
            // failure then carries no column another row brought.
            List<FieldVector> carried = new ArrayList<>();
            for (FieldVector column : added.values()) {
                if (indices.stream().anyMatch(i -> !column.isNull(i))) {
                    FieldVector target = column.getField().createVector(allocator);
                    target.allocateNew();
                    copy.added.put(column.getName(), target);
                    carried.add(column);
                }
            }
            for (int k = 0; k < indices.size(); k++) {
                int i = indices.get(k);
                for (int c = 0; c < root.getFieldVectors().size(); c++) {
                    copy.root.getVector(c).copyFromSafe(i, k, root.getVector(c));
                }
                for (FieldVector column : carried) {
                    copy.added.get(column.getName()).copyFromSafe(i, k, column);
                }
                if (copy.size == copy.offsets.length) {
                    copy.offsets = Arrays.copyOf(copy.offsets, copy.size * 2);
                }
                copy.offsets[copy.size] = offsets[i];
                copy.recordIds.add(recordIds.get(i));
                copy.size++;
            }
            return copy;
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
    }

    /** The distinct record_ids of the batch: what its generation holds after de-duplication. */
    Set<String> recordIds() {
        return new HashSet<>(recordIds);
    }

    /**
     * The rows to write: itself when every record_id is unique, otherwise a copy holding only the newest
     * row per key, in offset order. The returned batch is closed by the caller when it is not this one.
     */
    GenerationBatch newestPerKey() {
        Map<String, Integer> newest = newestIndexPerKey();
        if (newest.size() == size) {
            return this;
        }
        List<Integer> kept = new ArrayList<>(newest.values());
        kept.sort(null); // offsets ascend with the index
        return select(kept);
    }

    private Map<String, Integer> newestIndexPerKey() {
        Map<String, Integer> newest = new HashMap<>(size * 2);
        for (int i = 0; i < size; i++) {
            newest.put(recordIds.get(i), i); // later index = higher offset, which wins in a partition (NewestWins)
        }
        return newest;
    }

    /**
     * The columns with their row count set, for writing: the contract's, then those producers added. Still
     * owned by this batch (the caller does not close it).
     */
    public VectorSchemaRoot sealedRoot() {
        requireOpen();
        root.setRowCount(size);
        if (sizing != null) {
            sizing.learn(root);
        }
        if (added.isEmpty()) {
            return root;
        }
        List<FieldVector> vectors = new ArrayList<>(root.getFieldVectors());
        for (FieldVector column : added.values()) {
            column.setValueCount(size);
            vectors.add(column);
        }
        return new VectorSchemaRoot(vectors.stream().map(FieldVector::getField).toList(), vectors, size);
    }

    private void requireOpen() {
        if (closed) {
            throw new IllegalStateException("batch is closed");
        }
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            root.close();
            added.values().forEach(FieldVector::close);
        }
    }
}
