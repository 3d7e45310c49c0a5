package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.MemoryBudget;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationKeys;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.lance.Dataset;

/**
 * Open handles of immutable generation datasets, least recently used evicted past a bound. Opening a
 * dataset reads its manifest (an object-store round trip); a generation never changes, so a handle stays
 * right for as long as the generation is pending. Handles are counted: one is closed only when the cache
 * dropped it and no read still uses it (closing a handle under a running scan would free native memory
 * that scan uses). What the handles keep is counted in two {@link MemoryBudget}s: record_id positions and rows' keys
 * and orders (counted once loaded; past the limit the least recently used handles go), and whole columns (admitted
 * only while they fit, and counted until freed).
 *
 * <p>Over 300 lines because a handle's lease, its kept keys and columns and their two budgets change under the one
 * monitor of the cache: a handle is closed only when no read holds it and its bytes are released once.
 */
final class DatasetHandles implements AutoCloseable {
    /** A handle in use; close it to give it back. */
    final class Lease implements AutoCloseable {
        private final Handle handle;

        private Lease(Handle handle) {
            this.handle = handle;
        }

        Dataset dataset() {
            return handle.dataset;
        }

        /** Where each record_id sits in this (immutable) dataset, loaded on first use and kept with the handle. */
        GenerationKeys keys() {
            return handle.keys();
        }

        /** The key and order of each row of this (immutable) dataset, loaded on first use and kept with the handle. */
        PendingKeys.GenerationRows rows() {
            return handle.rows();
        }

        /**
         * Whole columns of this (immutable) dataset, row {@code i} being {@link #rows()}' row {@code i}: read on first
         * use and kept with the handle while the column budget has room; null when they are not kept (then scan).
         * Valid while this lease is open.
         */
        Map<String, FieldVector> columns(List<String> names) {
            return handle.columns(names);
        }

        @Override
        public void close() {
            handle.release();
        }
    }

    /**
     * One open dataset and what is kept with it; as a {@link GenerationColumns.Budget}, the cache's column budget as
     * this handle sees it: no room once the cache no longer keeps it.
     */
    private static final class Handle implements GenerationColumns.Budget {
        final Dataset dataset;
        private final DatasetHandles cache;
        private final AtomicInteger users = new AtomicInteger(1); // the cache's own reference
        private final Kept<GenerationKeys> keys = new Kept<>();
        private final Kept<PendingKeys.GenerationRows> rows = new Kept<>();
        private GenerationColumns columns; // guarded by this handle

        Handle(Dataset dataset, DatasetHandles cache) {
            this.dataset = dataset;
            this.cache = cache;
        }

        Map<String, FieldVector> columns(List<String> names) {
            if (cache.columnBytes.limit() == 0 || names.isEmpty()) {
                return null;
            }
            PendingKeys.GenerationRows read = rows();
            GenerationColumns kept;
            synchronized (this) {
                if (columns == null) {
                    columns = new GenerationColumns(
                            cache.allocator.newChildAllocator("generation-columns", 0, Long.MAX_VALUE));
                }
                kept = columns;
            }
            return kept.get(names, dataset, read, this);
        }

        @Override
        public long room() {
            return cache.columnRoom(this);
        }

        @Override
        public boolean tryAdmit(long bytes) {
            return cache.admitColumns(this, bytes);
        }

        GenerationKeys keys() {
            return keys.get(() -> GenerationKeys.load(dataset), k -> (long) k.keys() * KEY_POSITION_BYTES, this);
        }

        PendingKeys.GenerationRows rows() {
            return rows.get(() -> PendingKeys.GenerationRows.read(dataset), PendingKeys.GenerationRows::bytes, this);
        }

        /** Bytes of this handle counted in the cache's kept bytes (guarded by the cache). */
        long counted;

        /**
         * Bytes of this handle's kept columns counted in the cache's column bytes (guarded by the cache): until they
         * are freed, also after the cache dropped the handle while a read still uses it.
         */
        long countedColumns;

        boolean retain() {
            for (int n = users.get(); n > 0; n = users.get()) {
                if (users.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
            return false;
        }

        void release() {
            if (users.decrementAndGet() == 0) {
                boolean hadColumns;
                synchronized (this) {
                    hadColumns = columns != null;
                    if (hadColumns) {
                        columns.close();
                    }
                }
                if (hadColumns) {
                    cache.columnsFreed(this); // outside this handle's lock: the cache's lock is taken before it
                }
                dataset.close();
            }
        }
    }

    /** What a handle keeps of its (immutable) dataset: loaded once, on first use, and counted in the cache's bytes. */
    private static final class Kept<T> {
        private volatile T value;

        T get(Supplier<T> load, ToLongFunction<T> bytes, Handle handle) {
            T loaded = value;
            if (loaded == null) {
                synchronized (this) {
                    loaded = value;
                    if (loaded == null) {
                        value = loaded = load.get();
                        handle.cache.loaded(handle, bytes.applyAsLong(loaded));
                    }
                }
            }
            return loaded;
        }
    }

    /** A record_id's hash and row number in {@link GenerationKeys}. */
    private static final long KEY_POSITION_BYTES = 12;

    private final int capacity;
    /** Record_id positions and rows' keys and orders of the handles the cache keeps (changed under its lock). */
    private final MemoryBudget keptBytes;
    /** Whole columns of every handle not closed yet, kept or dropped (changed under the cache's lock). */
    private final MemoryBudget columnBytes;

    private final BufferAllocator allocator;
    private final Function<String, Dataset> opener;
    private final LinkedHashMap<String, Handle> handles = new LinkedHashMap<>(64, 0.75f, true);
    private boolean closed;

    /**
     * @param capacity the most handles kept open for reuse (0 = open and close on every read)
     * @param maxBytes the most memory kept with the handles (record_id positions, 12 bytes each; keys and orders of
     *     rows for bulk reads, ~100 bytes each); past it the least recently used handles go
     * @param maxColumnBytes the most memory of whole columns kept with the handles (0 = none); past it a column is
     *     not kept, and passes over its generation scan it
     * @param allocator where kept columns are allocated
     */
    DatasetHandles(
            int capacity,
            long maxBytes,
            long maxColumnBytes,
            BufferAllocator allocator,
            Function<String, Dataset> opener) {
        this.capacity = capacity;
        this.keptBytes = MemoryBudget.bounded(TableSettings.READ_GENERATION_KEYS_BYTES, maxBytes);
        this.columnBytes = MemoryBudget.bounded(TableSettings.READ_GENERATION_COLUMNS_BYTES, maxColumnBytes);
        this.allocator = allocator;
        this.opener = opener;
    }

    /** A handle of the dataset at {@code uri}, opened on first use. */
    Lease lease(String uri) {
        synchronized (this) {
            Handle cached = handles.get(uri);
            if (cached != null && cached.retain()) {
                return new Lease(cached);
            }
        }
        Handle opened = new Handle(opener.apply(uri), this); // opened outside the lock: other reads go on meanwhile
        synchronized (this) {
            Handle raced = handles.get(uri);
            if (raced != null && raced.retain()) {
                opened.release();
                return new Lease(raced);
            }
            opened.retain();
            if (capacity > 0 && !closed) {
                handles.put(uri, opened);
                evictOverCapacity();
            } else {
                opened.release(); // not kept: the lease is its only user
            }
            return new Lease(opened);
        }
    }

    /** Drops the handles whose URI is not in {@code live} (merged generations). */
    synchronized void retainOnly(Set<String> live) {
        Iterator<Map.Entry<String, Handle>> it = handles.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<String, Handle> entry = it.next();
            if (!live.contains(entry.getKey())) {
                it.remove();
                forget(entry.getValue());
            }
        }
    }

    /** Bytes of columns the budget can still take for {@code handle}: none when the cache does not keep it. */
    private synchronized long columnRoom(Handle handle) {
        return handles.containsValue(handle) ? columnBytes.room() : 0;
    }

    /** Counts a handle's newly read columns if the column budget has room; false: not kept. */
    private synchronized boolean admitColumns(Handle handle, long bytes) {
        if (!handles.containsValue(handle) || !columnBytes.tryAdmit(bytes)) {
            return false;
        }
        handle.countedColumns += bytes;
        return true;
    }

    /**
     * A handle the cache no longer keeps: its bytes uncounted, the cache's reference given back. Its columns stay
     * counted until the last read using it lets go and they are freed.
     */
    private void forget(Handle handle) {
        keptBytes.release(handle.counted);
        handle.counted = 0;
        handle.release();
    }

    private synchronized void columnsFreed(Handle handle) {
        columnBytes.release(handle.countedColumns);
        handle.countedColumns = 0;
    }

    private synchronized void loaded(Handle handle, long bytes) {
        if (handles.containsValue(handle)) { // a handle not (or no longer) kept counts nothing
            handle.counted += bytes;
            keptBytes.count(bytes); // loaded already: counted, and the least recently used go while over
            evictOverCapacity();
        }
    }

    private void evictOverCapacity() {
        Iterator<Map.Entry<String, Handle>> it = handles.entrySet().iterator();
        while ((handles.size() > capacity || keptBytes.over()) && it.hasNext()) {
            Handle eldest = it.next().getValue();
            it.remove();
            forget(eldest);
        }
    }

    synchronized int size() {
        return handles.size();
    }

    /** Bytes kept with the handles: record_id positions, the keys and orders of rows, whole columns. */
    synchronized long keptBytes() {
        return keptBytes.used() + columnBytes.used();
    }

    /** Bytes of whole columns kept with the handles. */
    long columnBytes() {
        return columnBytes.used();
    }

    /** Closes every kept handle (a read still using one keeps it until it is done); later reads open them again. */
    synchronized void clear() {
        handles.values().forEach(this::forget);
        handles.clear();
    }

    @Override
    public synchronized void close() {
        closed = true;
        handles.values().forEach(this::forget);
        handles.clear();
    }
}
