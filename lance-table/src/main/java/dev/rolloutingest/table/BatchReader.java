package dev.rolloutingest.table;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/** An ArrowReader over one in-memory batch, to hand it to Lance as a stream. Does not own the batch. */
final class BatchReader extends ArrowReader {
    private final VectorSchemaRoot source;
    private boolean consumed;

    BatchReader(BufferAllocator allocator, VectorSchemaRoot source) {
        super(allocator);
        this.source = source;
    }

    @Override
    public boolean loadNextBatch() {
        if (consumed) {
            return false;
        }
        consumed = true;
        try (ArrowRecordBatch batch = new VectorUnloader(source).getRecordBatch()) {
            loadRecordBatch(batch);
        }
        return true;
    }

    @Override
    public long bytesRead() {
        return 0;
    }

    @Override
    protected void closeReadSource() {}

    @Override
    protected Schema readSchema() {
        return source.getSchema();
    }
}
