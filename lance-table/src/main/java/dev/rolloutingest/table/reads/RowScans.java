package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Rows of the base or of a pending generation handed out one {@link RolloutRow} at a time, for gets, lists and counts:
 * a scan with a filter pushed down, or a point lookup that reads at most one row.
 */
final class RowScans {
    private final LanceIo lance;
    private final ReadCatalog catalog;

    RowScans(LanceIo lance, ReadCatalog catalog) {
        this.lance = lance;
        this.catalog = catalog;
    }

    /** The one row of the dataset a point lookup's {@code filter} matches (at most one does), whole. */
    Optional<RolloutRow> lookUp(Dataset dataset, String filter) {
        AtomicReference<RolloutRow> found = new AtomicReference<>();
        forEachRow(
                dataset,
                filter,
                RolloutSchema.allColumns(),
                row -> {
                    found.set(row);
                    return false;
                },
                true);
        return Optional.ofNullable(found.get());
    }

    void forEachRow(
            GenerationCatalog.Listed generation, String filter, List<String> columns, Predicate<RolloutRow> consumer) {
        try (DatasetHandles.Lease lease = catalog.generation(generation)) {
            forEachRow(lease.dataset(), filter, columns, consumer, false);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException.GenerationUnreadable(
                    lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
        }
    }

    void forEachRow(Dataset dataset, String filter, List<String> columns, Predicate<RolloutRow> consumer) {
        forEachRow(dataset, filter, columns, consumer, false);
    }

    /**
     * Streams rows in batches; the consumer returns false to stop early. A point lookup (at most one row
     * matches) stops the scan at the first row and reads ahead no further batch.
     */
    private void forEachRow(
            Dataset dataset, String filter, List<String> columns, Predicate<RolloutRow> consumer, boolean pointLookup) {
        List<String> projected = AddedColumnReads.withAdded(dataset, columns);
        if (pointLookup && filter != null && holdsRecords(dataset, projected)) {
            takeOne(dataset, filter, projected, consumer);
            return;
        }
        ScanOptions.Builder options =
                new ScanOptions.Builder().columns(projected).batchSize(1024);
        if (pointLookup) {
            options.limit(1).prefilter(true).batchReadahead(1);
        }
        if (filter != null) {
            options.filter(filter);
        }
        try (LanceScanner scanner = dataset.newScan(options.build());
                ArrowReader reader = scanner.scanBatches()) {
            feed(reader, consumer);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException("Table " + lance.location() + ": scan failed: " + e.getMessage(), e);
        }
    }

    /**
     * A point lookup that reads the row by its row id: lance-core 7.0.0 loses a struct column's nulls when a
     * filtered scan returns a single row (a null record reads as a record of nulls); {@code takeRows} keeps them.
     */
    private void takeOne(Dataset dataset, String filter, List<String> columns, Predicate<RolloutRow> consumer) {
        List<Long> rowIds = new ArrayList<>();
        try {
            try (LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                            .columns(List.of(RolloutSchema.RECORD_ID))
                            .withRowId(true)
                            .filter(filter)
                            .prefilter(true)
                            .limit(1)
                            .build());
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    VectorSchemaRoot root = reader.getVectorSchemaRoot();
                    for (int i = 0; i < root.getRowCount(); i++) {
                        rowIds.add(((UInt8Vector) root.getVector("_rowid")).get(i));
                    }
                }
            }
            if (rowIds.isEmpty()) {
                return;
            }
            try (ArrowReader reader = dataset.takeRows(rowIds, columns)) {
                feed(reader, consumer);
            }
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException("Table " + lance.location() + ": lookup failed: " + e.getMessage(), e);
        }
    }

    /** Hands the reader's rows to the consumer until it returns false. */
    private static void feed(ArrowReader reader, Predicate<RolloutRow> consumer) throws IOException {
        while (reader.loadNextBatch()) {
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            for (int i = 0; i < root.getRowCount(); i++) {
                if (!consumer.test(ArrowRows.read(root, i))) {
                    return;
                }
            }
        }
    }

    /** Whether any of these columns of the dataset is, or holds, a record (struct). */
    private static boolean holdsRecords(Dataset dataset, List<String> columns) {
        for (Field field : AddedColumnReads.of(dataset)) {
            if (columns.contains(field.getName()) && holdsStruct(field)) {
                return true;
            }
        }
        return false;
    }

    private static boolean holdsStruct(Field field) {
        return field.getType() instanceof ArrowType.Struct
                || field.getChildren().stream().anyMatch(RowScans::holdsStruct);
    }
}
