package dev.rolloutingest.table.rows;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The rows of a scan of the base without the deletes it keeps ({@link Tombstones}): what a dataset made of them
 * (a snapshot's export) must hold. Batches without a delete pass as they are; the others are copied without it.
 */
public final class LiveRows extends ArrowReader {
    private final ArrowReader source;

    /** Takes {@code source} over (closing this closes it); its columns must include experiment and metadata. */
    public LiveRows(BufferAllocator allocator, ArrowReader source) {
        super(allocator);
        this.source = source;
    }

    @Override
    public boolean loadNextBatch() throws IOException {
        while (source.loadNextBatch()) {
            VectorSchemaRoot batch = source.getVectorSchemaRoot();
            List<Integer> kept = new ArrayList<>(batch.getRowCount());
            for (int i = 0; i < batch.getRowCount(); i++) {
                if (!Tombstones.is(batch, i)) {
                    kept.add(i);
                }
            }
            if (kept.isEmpty()) {
                continue;
            }
            if (kept.size() == batch.getRowCount()) {
                try (ArrowRecordBatch whole = new VectorUnloader(batch).getRecordBatch()) {
                    loadRecordBatch(whole);
                }
                return true;
            }
            try (VectorSchemaRoot copy = VectorSchemaRoot.create(batch.getSchema(), allocator)) {
                copy.allocateNew();
                List<FieldVector> from = batch.getFieldVectors();
                List<FieldVector> to = copy.getFieldVectors();
                for (int k = 0; k < kept.size(); k++) {
                    for (int c = 0; c < from.size(); c++) {
                        to.get(c).copyFromSafe(kept.get(k), k, from.get(c));
                    }
                }
                copy.setRowCount(kept.size());
                try (ArrowRecordBatch rows = new VectorUnloader(copy).getRecordBatch()) {
                    loadRecordBatch(rows);
                }
            }
            return true;
        }
        return false;
    }

    @Override
    public long bytesRead() {
        return source.bytesRead();
    }

    @Override
    protected void closeReadSource() throws IOException {
        source.close();
    }

    @Override
    protected Schema readSchema() throws IOException {
        return source.getVectorSchemaRoot().getSchema();
    }
}
