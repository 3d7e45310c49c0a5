package dev.rolloutingest.table;

import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ReadOptions;
import org.lance.WriteParams;

/** The Lance calls every part of the table module shares: open and write datasets with storage options. */
final class LanceIo {
    private final TableLocation location;
    private final BufferAllocator allocator;

    LanceIo(TableLocation location, BufferAllocator allocator) {
        this.location = location;
        this.allocator = allocator;
    }

    TableLocation location() {
        return location;
    }

    BufferAllocator allocator() {
        return allocator;
    }

    /** The base table at its latest version. Callers close it. */
    Dataset openBase() {
        return open(location.uri());
    }

    Dataset open(String uri) {
        return Dataset.open().allocator(allocator).uri(uri)
                .readOptions(new ReadOptions.Builder().setStorageOptions(location.storageOptions()).build())
                .build();
    }

    /** CREATE only: an existing dataset fails with "Dataset already exists" and stays intact. */
    Dataset create(String uri, VectorSchemaRoot batch) {
        try (ArrowReader reader = new BatchReader(allocator, batch)) {
            return Dataset.write().allocator(allocator).reader(reader).uri(uri)
                    .mode(WriteParams.WriteMode.CREATE)
                    .storageOptions(location.storageOptions())
                    .execute();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("closing the batch reader failed", e);
        }
    }

    /** Exports a batch as a C stream for mergeInsert; the caller closes the returned stream. */
    ArrowArrayStream stream(VectorSchemaRoot batch) {
        ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator);
        Data.exportArrayStream(allocator, new BatchReader(allocator, batch), stream);
        return stream;
    }

    static boolean isAlreadyExists(RuntimeException e) {
        return String.valueOf(e.getMessage()).contains("already exists");
    }

    static boolean isNotFound(RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        return message.contains("not found") || message.contains("NotFound") || message.contains("No such file")
                || message.contains("does not exist");
    }
}
