package dev.rolloutingest.table;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A generation whose rows all go to the base as new keys, below the size worth adopting, is copied: its batches
 * are scanned in the base's schema and handed to the append's write as they are, so its rows never pass through
 * the merge's row code (read row by row into {@link MergeSource}, then sliced into new batches), which cost about
 * as much per row as ingest's whole seal. The copy keeps one fragment per append, not one per generation.
 *
 * <p>Batches are read into memory before the write rather than streamed into it: the write pulls its stream
 * from inside lance's runtime, and a scan of another dataset pulled from there would enter that runtime again.
 * Memory is the round's, as when the rows were read whole.
 */
final class GenerationCopy {
    private GenerationCopy() {}

    /** The generations' rows as batches of {@code table}'s schema; the caller closes them. */
    static List<VectorSchemaRoot> read(LanceIo lance, List<MergeSource.Span> spans, Schema table) {
        List<String> columns = table.getFields().stream().map(Field::getName).toList();
        List<VectorSchemaRoot> batches = new ArrayList<>();
        try {
            for (MergeSource.Span span : spans) {
                SealedGeneration generation = span.generation();
                try (Dataset dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
                        LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                                .columns(columns)
                                .batchSize(8192)
                                .build());
                        ArrowReader reader = scanner.scanBatches()) {
                    long rows = 0;
                    while (reader.loadNextBatch()) {
                        VectorSchemaRoot scanned = reader.getVectorSchemaRoot();
                        VectorSchemaRoot copy = VectorSchemaRoot.create(table, lance.allocator());
                        batches.add(copy);
                        try (ArrowRecordBatch unloaded = new VectorUnloader(scanned).getRecordBatch()) {
                            new VectorLoader(copy).load(unloaded); // the scan's buffers, shared, not copied
                        }
                        rows += copy.getRowCount();
                    }
                    if (rows != span.rows()) {
                        throw new IllegalStateException("Generation " + generation.folder() + " of shard "
                                + generation.shard() + " holds " + rows + " rows, its keys " + span.rows());
                    }
                } catch (RolloutTableException | IllegalStateException e) {
                    throw e;
                } catch (Exception e) {
                    throw new RolloutTableException.GenerationUnreadable(
                            lance.location().uri(),
                            generation.shard(),
                            generation.generation(),
                            generation.folder(),
                            e);
                }
            }
            return batches;
        } catch (RuntimeException e) {
            batches.forEach(VectorSchemaRoot::close);
            throw e;
        }
    }
}
