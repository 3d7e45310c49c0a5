package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import java.util.Map;
import java.util.function.Function;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.JniLoader;
import org.lance.ReadOptions;
import org.lance.Session;
import org.lance.WriteParams;

/** The Lance calls every part of the table module shares: open and write datasets with storage options. */
public final class LanceIo {
    private static final Function<VectorSchemaRoot, String> NO_FAULT = batch -> null;

    private final TableLocation location;
    private final BufferAllocator allocator;
    private final Session session;
    private final boolean ownsSession;
    private volatile Function<VectorSchemaRoot, String> writeFault = NO_FAULT;

    /**
     * @param cacheBytes lance-core's index and metadata caches (3/4 and 1/4), shared by every dataset this
     *     table opens: an index or manifest read once is not read again by the next lookup
     */
    public LanceIo(TableLocation location, BufferAllocator allocator, long cacheBytes) {
        this(location, allocator, session(cacheBytes), true);
    }

    /** With the cache every table of a catalog shares (closed by its owner, not here). */
    public LanceIo(TableLocation location, BufferAllocator allocator, SharedLanceCache shared) {
        this(location, allocator, shared.session(), false);
    }

    private LanceIo(TableLocation location, BufferAllocator allocator, Session session, boolean ownsSession) {
        this.location = location;
        this.allocator = allocator;
        this.session = session; // built by session(), which swept the native library copies first
        this.ownsSession = ownsSession;
    }

    /**
     * Loads lance-core's native library now (its leftover copies swept first): lance-core unpacks 173 MB from its jar
     * and loads it at its first use, 1.5-2 s of a process's start, which a caller may spend on another thread while
     * the start does other work.
     */
    public static void loadNativeLibrary() {
        NativeLibraryCopies.sweepOnce();
        JniLoader.ensureLoaded();
    }

    static Session session(long cacheBytes) {
        NativeLibraryCopies.sweepOnce();
        return Session.builder()
                .indexCacheSizeBytes(cacheBytes / 4 * 3)
                .metadataCacheSizeBytes(cacheBytes / 4)
                .build();
    }

    public void close() {
        if (ownsSession) {
            session.close();
        }
    }

    public TableLocation location() {
        return location;
    }

    public BufferAllocator allocator() {
        return allocator;
    }

    /** The base table at its latest version. Callers close it. */
    public Dataset openBase() {
        return open(location.uri());
    }

    public Dataset open(String uri) {
        return open(uri, null);
    }

    /** At {@code version}, or the latest when null. */
    private Dataset open(String uri, Long version) {
        ReadOptions.Builder options = new ReadOptions.Builder().setStorageOptions(location.storageOptions());
        if (version != null) {
            options.setVersion(version);
        }
        try {
            return Dataset.open()
                    .allocator(allocator)
                    .uri(uri)
                    .session(session)
                    .readOptions(options.build())
                    .build();
        } catch (Exception e) {
            throw unchecked(e);
        }
    }

    /**
     * lance-core throws IOException from native code without declaring it, so it slips past every
     * {@code catch (RuntimeException)}; here it becomes one, message kept (callers match on it).
     */
    public static RuntimeException unchecked(Exception thrown) {
        return thrown instanceof RuntimeException r ? r : new RolloutTableException(thrown.getMessage(), thrown);
    }

    /**
     * A generation dataset: written once with CREATE, so always at version 1, which spares the listing
     * of its versions an open otherwise makes.
     */
    public Dataset openGeneration(String uri) {
        return open(uri, 1L);
    }

    /** CREATE only: an existing dataset fails with "Dataset already exists" and stays intact. */
    public Dataset create(String uri, VectorSchemaRoot batch) {
        return create(uri, batch, location.storageOptions());
    }

    /** Writes a throwaway dataset at a {@code memory://} URI: the same write path, no store involved. */
    public Dataset createInMemory(String uri, VectorSchemaRoot batch) {
        if (!uri.startsWith("memory://")) {
            throw new IllegalArgumentException("not an in-memory URI: " + uri);
        }
        return create(uri, batch, Map.of());
    }

    /** Whether a test fault is injected (then rows that are not written, e.g. adopted ones, are checked too). */
    public boolean hasWriteFault() {
        return writeFault != NO_FAULT;
    }

    /** Fails as the test fault says for these rows, if one is injected. */
    public void checkWriteFault(VectorSchemaRoot batch) {
        String injected = writeFault.apply(batch);
        if (injected != null) {
            throw new IllegalStateException(injected);
        }
    }

    private Dataset create(String uri, VectorSchemaRoot batch, Map<String, String> storageOptions) {
        checkWriteFault(batch);
        try (ArrowReader reader = new BatchReader(allocator, batch)) {
            return Dataset.write()
                    .allocator(allocator)
                    .reader(reader)
                    .uri(uri)
                    .mode(WriteParams.WriteMode.CREATE)
                    .storageOptions(storageOptions)
                    .execute();
        } catch (Exception e) {
            throw unchecked(e);
        }
    }

    /**
     * Fault injection for tests of the seal's safety net: a function of the rows about to be written that
     * returns an error message to fail the write with, or null. Never set in production.
     */
    public void injectWriteFault(Function<VectorSchemaRoot, String> fault) {
        this.writeFault = fault == null ? NO_FAULT : fault;
    }

    /** Exports a batch as a C stream for mergeInsert; the caller closes the returned stream. */
    ArrowArrayStream stream(VectorSchemaRoot batch) {
        ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator);
        Data.exportArrayStream(allocator, new BatchReader(allocator, batch), stream);
        return stream;
    }

    public static boolean isAlreadyExists(RuntimeException e) {
        return String.valueOf(e.getMessage()).contains("already exists");
    }

    public static boolean isNotFound(RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        return message.contains("not found")
                || message.contains("NotFound")
                || message.contains("No such file")
                || message.contains("does not exist");
    }
}
