package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationKeyColumns;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.FragmentMetadata;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A merge's reads of its generations into a {@link MergeSource}: a generation's rows (its keys and provenance only,
 * or every column), and later the full rows of one read by its keys first. The prepare reads with it, and the commit
 * when it must write rows of a generation it did not adopt after all.
 */
final class GenerationReads {
    private final LanceIo lance;
    private final ObjectStore store;
    private final Runnable reread;

    GenerationReads(LanceIo lance, ObjectStore store) {
        this(lance, store, () -> {});
    }

    /** @param reread told of each keys-only generation {@link #withAllColumns} reads again in full */
    GenerationReads(LanceIo lance, ObjectStore store, Runnable reread) {
        this.lance = lance;
        this.store = store;
        this.reread = reread;
    }

    /**
     * Reads a generation's key and order columns ({@link GenerationKeyColumns#COLUMNS}) from the file written beside
     * it, else from its dataset.
     */
    void readKeys(MergeSource source, SealedGeneration generation) {
        try (GenerationKeyColumns.Read file = GenerationKeyColumns.read(store, generation, lance.allocator())) {
            if (file != null) {
                int first = source.size();
                source.addAll(file.rows(), lance.allocator());
                // written from the rows lance-core's create took, in their order
                source.endGeneration(generation, first, file.fragment(), file.schema(), true);
                return;
            }
        }
        readGeneration(source, generation, GenerationKeyColumns.COLUMNS);
    }

    /** Reads a generation's rows: these columns, or (null) every column it has, added ones too. */
    void readGeneration(MergeSource source, SealedGeneration generation, List<String> columns) {
        String uri = lance.location().resolve(generation.datasetPath());
        // a read by keys (a generation the commit may adopt) says where each row sits in its fragment too
        boolean byKeys = columns != null;
        try (Dataset dataset = lance.openGeneration(uri);
                LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(byKeys ? columns : allColumns(dataset))
                        .withRowAddress(byKeys)
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            int first = source.size();
            FragmentMetadata fragment = GenerationKeyColumns.fragmentOf(dataset);
            boolean inOrder = byKeys && fragment != null;
            long expected = fragment == null ? 0 : (long) fragment.getId() << 32;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                if (inOrder) {
                    UInt8Vector addresses = (UInt8Vector) batch.getVector(KeyAddresses.ROW_ADDRESS);
                    for (int i = 0; i < batch.getRowCount() && inOrder; i++) {
                        inOrder = addresses.get(i) == expected++;
                    }
                }
                source.addAll(batch, lance.allocator());
            }
            source.endGeneration(generation, first, fragment, GenerationKeyColumns.schemaOf(dataset), inOrder);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw unreadable(generation, e);
        }
    }

    /** Reads a keys-only generation's rows in full, in the order its keys were read. */
    void readFull(MergeSource source, MergeSource.Span span) {
        SealedGeneration generation = span.generation();
        try (Dataset dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
                LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(allColumns(dataset))
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            int row = 0;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                source.addFullRows(span, batch, row, lance.allocator());
                row += batch.getRowCount();
            }
            source.fullRowsRead(span);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw unreadable(generation, e);
        }
    }

    /** The contract's columns and those producers added that a generation holds. */
    private static List<String> allColumns(Dataset generation) {
        List<String> columns = new ArrayList<>(RolloutSchema.allColumns());
        columns.addAll(AddedColumns.names(generation.getSchema()));
        return columns;
    }

    private RolloutTableException unreadable(SealedGeneration generation, Exception e) {
        return new RolloutTableException.GenerationUnreadable(
                lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
    }

    /**
     * The rows with all their columns: keys-only generations among them are read in full first, and every row is
     * looked up where it sits now (a row taken before another call read its generation in full still points at
     * the keys-only batch).
     */
    List<MergeSource.Row> withAllColumns(List<MergeSource.Row> rows) {
        for (MergeSource.Row row : rows) {
            MergeSource.Span span = row.source().spanOf(row.ordinal());
            if (row.source().isKeysOnly(span)) {
                readFull(row.source(), span);
                reread.run();
            }
        }
        List<MergeSource.Row> current = new ArrayList<>(rows.size());
        for (MergeSource.Row row : rows) {
            current.add(row.source().row(row.ordinal()));
        }
        return current;
    }
}
