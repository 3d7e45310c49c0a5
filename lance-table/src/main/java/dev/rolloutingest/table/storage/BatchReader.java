package dev.rolloutingest.table.storage;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.types.pojo.Schema;

/** An ArrowReader over in-memory batches of one schema, to hand them to Lance as a stream. Does not own them. */
public final class BatchReader extends ArrowReader {
    private final List<VectorSchemaRoot> sources;
    private int next;

    public BatchReader(BufferAllocator allocator, VectorSchemaRoot source) {
        this(allocator, List.of(source));
    }

    public BatchReader(BufferAllocator allocator, List<VectorSchemaRoot> sources) {
        super(allocator);
        if (sources.isEmpty()) {
            throw new IllegalArgumentException("no batch");
        }
        this.sources = sources;
    }

    @Override
    public boolean loadNextBatch() {
        if (next >= sources.size()) {
            return false;
        }
        try (ArrowRecordBatch batch = new VectorUnloader(sources.get(next++)).getRecordBatch()) {
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
        return sources.get(0).getSchema();
    }
}
