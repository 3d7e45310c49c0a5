package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.reads.StreamPass.Keep;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Where a {@link RowStream} stands among its passes: the one open (its scan or take, or a generation's kept columns,
 * and the generation's lease), opened in order with the columns it needs, and closed once read. Between the planned
 * passes it inserts the takes of base rows newer than their pending rows ({@link StreamSurvivors}).
 */
final class StreamPasses implements AutoCloseable {
    private final List<StreamPass> passes;
    private final Function<GenerationCatalog.Listed, DatasetHandles.Lease> generations;
    private final Dataset base;
    /** The deletes kept beside the base, for passes over them; null when there are none. */
    private final Dataset deletes;

    private final PendingKeys pending;
    private final StreamSurvivors survivors;
    private final BatchAssembler assembler;
    private final int batchRows;
    private final int readahead;

    private int next;
    private StreamPass current;
    private DatasetHandles.Lease lease;
    /** The current generation pass's kept keys, orders and delete marks. */
    private PendingKeys.GenerationRows generationRows;
    /** The current generation pass's columns kept with its handle (null: it scans). */
    private Map<String, FieldVector> keptColumns;

    private LanceScanner scanner;
    private ArrowReader reader;

    StreamPasses(
            List<StreamPass> passes,
            Function<GenerationCatalog.Listed, DatasetHandles.Lease> generations,
            Dataset base,
            Dataset deletes,
            PendingKeys pending,
            StreamSurvivors survivors,
            BatchAssembler assembler,
            int batchRows,
            int readahead) {
        this.passes = passes;
        this.generations = generations;
        this.base = base;
        this.deletes = deletes;
        this.pending = pending;
        this.survivors = survivors;
        this.assembler = assembler;
        this.batchRows = batchRows;
        this.readahead = readahead;
    }

    /** Whether a pass is open: it reads from {@link #reader()}, or from {@link #keptColumns()}. */
    boolean isOpen() {
        return reader != null || keptColumns != null;
    }

    StreamPass current() {
        return current;
    }

    /** The open pass's batches, when it scans or takes. */
    ArrowReader reader() {
        return reader;
    }

    /** The open generation pass's kept keys, orders and delete marks. */
    PendingKeys.GenerationRows generationRows() {
        return generationRows;
    }

    /** The open generation pass's whole columns kept with its handle; null when it scans. */
    Map<String, FieldVector> keptColumns() {
        return keptColumns;
    }

    /** Opens the next pass; false when every pass has run. */
    boolean openNext() throws IOException {
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
                return openNext(); // the usual case: no key moved across partitions
            }
            filter = filter == null ? keys : filter + " AND (" + keys + ")";
        }
        Dataset dataset = current.deletes() ? deletes : base;
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
            if (!pending.isEmpty() || current.deletes()) {
                // a delete beside the base is also ordered against the base's value of its key
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

    /** Ends the open pass; {@code finished}: it read all its rows (else the answer is closed early, by a limit). */
    void endPass(boolean finished) throws IOException {
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

    /** Ends whatever is open: a pass, or the lease of one that failed to open. */
    @Override
    public void close() throws IOException {
        if (isOpen()) {
            endPass(false);
        } else if (lease != null) {
            lease.close();
        }
    }
}
