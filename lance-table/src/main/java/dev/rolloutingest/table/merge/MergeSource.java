package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.generations.GenerationKeyColumns;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.lance.FragmentMetadata;

/**
 * The rows one shard brings to a merge: its generations' scanned batches, kept as they came (no copy, no row objects),
 * and the newest row per record_id by {@link NewestWins}. A merge-insert source must hold each key once ("Ambiguous
 * merge inserts are prohibited"), so rows that lose are marked dropped here and left out when written. The rows a
 * commit writes become batches again in {@link WriteBatches}; each row's place in the order is kept by {@link
 * RowOrders}.
 */
final class MergeSource implements AutoCloseable {
    /** Where a row sits: which retained batch, which row of it. */
    private record Position(int batch, int row) {}

    private final List<VectorSchemaRoot> batches = new ArrayList<>();
    private final List<Position> positions = new ArrayList<>();
    private final Map<String, Integer> rowOfKey = new HashMap<>();
    private final BitSet dropped = new BitSet();
    private final RowOrders orders = new RowOrders();
    private final List<String> keys = new ArrayList<>();
    private int size;
    private long bytes;

    /**
     * Takes a scanned batch (same schema, all columns) over without copying it (its buffers are retained),
     * and records each row's key and provenance; older values of a key are dropped.
     */
    void addAll(VectorSchemaRoot scanned, BufferAllocator allocator) {
        VectorSchemaRoot batch = retain(scanned, allocator);
        batches.add(batch);
        int batchIndex = batches.size() - 1;
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        IntVector partition = (IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION);
        BigIntVector offset = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
        TimeStampMicroTZVector ingested = (TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT);
        for (int i = 0; i < batch.getRowCount(); i++) {
            String key = new String(ids.get(i), StandardCharsets.UTF_8);
            int row = size;
            orders.add(row, partition.get(i), offset.get(i), ingested.get(i));
            keys.add(key);
            positions.add(new Position(batchIndex, i));
            size++;
            Integer earlier = rowOfKey.get(key);
            if (earlier == null) {
                rowOfKey.put(key, row);
            } else if (newer(row, earlier)) {
                dropped.set(earlier);
                rowOfKey.put(key, row);
            } else {
                dropped.set(row);
            }
        }
        bytes += bufferBytes(batch);
    }

    /** The scanned batch's buffers in a root of our own, not copied. */
    private static VectorSchemaRoot retain(VectorSchemaRoot scanned, BufferAllocator allocator) {
        VectorSchemaRoot batch = VectorSchemaRoot.create(scanned.getSchema(), allocator);
        try (ArrowRecordBatch buffers = new VectorUnloader(scanned).getRecordBatch()) {
            new VectorLoader(batch).load(buffers);
        }
        return batch;
    }

    private static long bufferBytes(VectorSchemaRoot batch) {
        return batch.getFieldVectors().stream()
                .mapToLong(FieldVector::getBufferSize)
                .sum();
    }

    private boolean newer(int candidate, int current) {
        return RowOrders.replaces(orders, candidate, orders, current);
    }

    /** Rows that will be written. */
    int rows() {
        return size - dropped.cardinality();
    }

    /**
     * Off-heap bytes held, counting a keys-only generation at its sealed size (what it holds once read in full,
     * as it must be if its keys turn out to need the join).
     */
    long bytes() {
        return bytes + keysOnlyBytes;
    }

    /** A kept row: its key (UTF-8), the key's hash for the filters, and where its values sit. */
    record Row(byte[] key, KeyFilter.Hash hash, VectorSchemaRoot batch, int index, MergeSource source, int ordinal) {
        String keyString() {
            return new String(key, StandardCharsets.UTF_8);
        }

        /** A delete of its key ({@link Tombstones}); a keys-only row never is (see {@link #mayHoldDeletes}). */
        boolean isTombstone() {
            return Tombstones.is(batch, index);
        }

        /** Where the row sits in its partition, for {@link NewestWins}. */
        int partition() {
            return source.partition(ordinal);
        }

        long offset() {
            return source.offset(ordinal);
        }

        long ingestedMicros() {
            return source.ingestedMicros(ordinal);
        }
    }

    /**
     * One generation's rows in this source (ordinals [first, first + rows)), with what adopting its data files
     * needs: its one fragment (null when it has several or a deletion file) and its schema with lance's field ids; and
     * whether its rows were read in the fragment's order (the row at ordinal first + i is the fragment's row i, as
     * the row addresses the read returned say), so an adopted fragment's row addresses are known without a read.
     */
    record Span(
            SealedGeneration generation,
            int first,
            int rows,
            FragmentMetadata fragment,
            String schema,
            boolean rowsInOrder) {}

    private final List<Span> spans = new ArrayList<>();
    /**
     * Generations whose rows are so far only their {@link GenerationKeyColumns#COLUMNS} (candidates for adoption).
     */
    private final Set<Span> keysOnly = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Sealed bytes of the keys-only generations: what they would hold once read in full. */
    private long keysOnlyBytes;

    /** Marks the rows added since {@code first} as the generation's. */
    Span endGeneration(
            SealedGeneration generation, int first, FragmentMetadata fragment, String schema, boolean rowsInOrder) {
        Span span = new Span(generation, first, size - first, fragment, schema, rowsInOrder);
        spans.add(span);
        return span;
    }

    List<Span> spans() {
        return spans;
    }

    /** Whether any row of the span lost to a newer one of the same key in this source. */
    boolean anyDropped(Span span) {
        int next = dropped.nextSetBit(span.first());
        return next >= 0 && next < span.first() + span.rows();
    }

    /** The span's keys, hashed for the filters. */
    List<KeyFilter.Hash> hashes(Span span) {
        List<KeyFilter.Hash> hashes = new ArrayList<>(span.rows());
        for (int i = span.first(); i < span.first() + span.rows(); i++) {
            hashes.add(KeyFilter.hash(keys.get(i)));
        }
        return hashes;
    }

    /** Marks a generation read as keys only: its rows must be read in full ({@link #addFullRows}) before use. */
    void keepKeysOnly(Span span) {
        keysOnly.add(span);
        keysOnlyBytes += span.generation().bytes();
    }

    /** True when a row of the span has an empty experiment, as deletes have: it must be read in full. */
    boolean mayHoldDeletes(Span span) {
        for (int ordinal = span.first(); ordinal < span.first() + span.rows(); ordinal++) {
            Position at = positions.get(ordinal);
            VarCharVector experiment = (VarCharVector) batches.get(at.batch()).getVector(RolloutSchema.EXPERIMENT);
            if (experiment != null && !experiment.isNull(at.row()) && experiment.getValueLength(at.row()) == 0) {
                return true;
            }
        }
        return false;
    }

    boolean isKeysOnly(Span span) {
        return keysOnly.contains(span);
    }

    /**
     * Takes a batch of a keys-only generation's full rows, scanned in the order its keys were (the generation's
     * {@code fromRow}-th row first): its rows now point there. Fails if a key differs from the one read first.
     */
    void addFullRows(Span span, VectorSchemaRoot scanned, int fromRow, BufferAllocator allocator) {
        VectorSchemaRoot batch = retain(scanned, allocator);
        batches.add(batch);
        int batchIndex = batches.size() - 1;
        VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
        for (int i = 0; i < batch.getRowCount(); i++) {
            int ordinal = span.first() + fromRow + i;
            if (ordinal >= span.first() + span.rows()
                    || !keys.get(ordinal).equals(new String(ids.get(i), StandardCharsets.UTF_8))) {
                throw new IllegalStateException(
                        "generation " + span.generation().generation() + " of shard "
                                + span.generation().shard() + " read back in another order");
            }
            positions.set(ordinal, new Position(batchIndex, i));
        }
        bytes += bufferBytes(batch);
    }

    /** After {@link #addFullRows} took every row of the span. */
    void fullRowsRead(Span span) {
        if (keysOnly.remove(span)) {
            keysOnlyBytes -= span.generation().bytes();
        }
    }

    /** The kept row at an ordinal, where it sits now. */
    Row row(int ordinal) {
        Position at = positions.get(ordinal);
        byte[] key = keys.get(ordinal).getBytes(StandardCharsets.UTF_8);
        return new Row(key, KeyFilter.murmur3x64(key), batches.get(at.batch()), at.row(), this, ordinal);
    }

    /** The row's place in its partition at an ordinal, for {@link NewestWins}. */
    int partition(int ordinal) {
        return orders.partition(ordinal);
    }

    long offset(int ordinal) {
        return orders.offset(ordinal);
    }

    long ingestedMicros(int ordinal) {
        return orders.ingestedMicros(ordinal);
    }

    /** Rows added so far (kept and dropped): the ordinal the next row gets. */
    int size() {
        return size;
    }

    /** The generation a row came from. */
    Span spanOf(int ordinal) {
        int low = 0;
        int high = spans.size() - 1;
        while (low < high) {
            int mid = (low + high + 1) >>> 1;
            if (spans.get(mid).first() <= ordinal) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        return spans.get(low);
    }

    /**
     * The rows one commit writes of several sources, in no particular order: each source's newest row per key, and of
     * a key in several sources (a record_id written to several partitions) only the newest of them. Nothing is
     * marked: a commit of fewer of these sources (a round cut in groups, halves after a failure) takes the newest of
     * its own, so every version a commit makes holds, for the generations it marks, their newest rows.
     */
    static List<Row> keptRows(List<MergeSource> sources) {
        Map<String, int[]> owner = new HashMap<>(); // key -> {source, ordinal}
        for (int s = 0; s < sources.size(); s++) {
            MergeSource source = sources.get(s);
            for (Map.Entry<String, Integer> entry : source.rowOfKey.entrySet()) {
                int[] current = owner.get(entry.getKey());
                int row = entry.getValue();
                if (current == null
                        || RowOrders.replaces(source.orders, row, sources.get(current[0]).orders, current[1])) {
                    owner.put(entry.getKey(), new int[] {s, row});
                }
            }
        }
        List<Row> rows = new ArrayList<>(owner.size());
        for (int[] kept : owner.values()) {
            rows.add(sources.get(kept[0]).row(kept[1]));
        }
        return rows;
    }

    @Override
    public void close() {
        batches.forEach(VectorSchemaRoot::close);
        batches.clear();
    }
}
