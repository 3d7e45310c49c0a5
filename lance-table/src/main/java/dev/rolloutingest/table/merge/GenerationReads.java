package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
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
    /** What a merge reads first of every generation: the key and what orders rows ({@link NewestWins}). */
    static final List<String> KEY_COLUMNS = List.of(
            RolloutSchema.RECORD_ID,
            RolloutSchema.EXPERIMENT, // empty in a delete: such a generation is read in full
            RolloutSchema.SOURCE_PARTITION,
            RolloutSchema.SOURCE_OFFSET,
            RolloutSchema.INGESTED_AT);

    private final LanceIo lance;

    GenerationReads(LanceIo lance) {
        this.lance = lance;
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
            FragmentMetadata fragment = GenerationAdoption.fragmentOf(dataset);
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
            source.endGeneration(generation, first, fragment, GenerationAdoption.schemaOf(dataset), inOrder);
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
            }
        }
        List<MergeSource.Row> current = new ArrayList<>(rows.size());
        for (MergeSource.Row row : rows) {
            current.add(row.source().row(row.ordinal()));
        }
        return current;
    }
}
