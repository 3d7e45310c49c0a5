package dev.rolloutingest.table;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.lance.Dataset;

/**
 * Open handles of immutable generation datasets, least recently used evicted past a bound. Opening a
 * dataset reads its manifest (an object-store round trip); a generation never changes, so a handle stays
 * right for as long as the generation is pending. Handles are counted: one is closed only when the cache
 * dropped it and no read still uses it (closing a handle under a running scan would free native memory
 * that scan uses).
 */
final class DatasetHandles implements AutoCloseable {
    /** A handle in use; close it to give it back. */
    static final class Lease implements AutoCloseable {
        private final Handle handle;

        private Lease(Handle handle) {
            this.handle = handle;
        }

        Dataset dataset() {
            return handle.dataset;
        }

        @Override
        public void close() {
            handle.release();
        }
    }

    private static final class Handle {
        final Dataset dataset;
        private final AtomicInteger users = new AtomicInteger(1); // the cache's own reference

        Handle(Dataset dataset) {
            this.dataset = dataset;
        }

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
                dataset.close();
            }
        }
    }

    private final int capacity;
    private final Function<String, Dataset> opener;
    private final LinkedHashMap<String, Handle> handles = new LinkedHashMap<>(64, 0.75f, true);
    private boolean closed;

    /** @param capacity the most handles kept open for reuse (0 = open and close on every read) */
    DatasetHandles(int capacity, Function<String, Dataset> opener) {
        this.capacity = capacity;
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
        Handle opened = new Handle(opener.apply(uri)); // opened outside the lock: other reads go on meanwhile
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
    synchronized void retainOnly(java.util.Set<String> live) {
        Iterator<Map.Entry<String, Handle>> it = handles.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<String, Handle> entry = it.next();
            if (!live.contains(entry.getKey())) {
                it.remove();
                entry.getValue().release();
            }
        }
    }

    private void evictOverCapacity() {
        Iterator<Map.Entry<String, Handle>> it = handles.entrySet().iterator();
        while (handles.size() > capacity && it.hasNext()) {
            Handle eldest = it.next().getValue();
            it.remove();
            eldest.release();
        }
    }

    synchronized int size() {
        return handles.size();
    }

    @Override
    public synchronized void close() {
        closed = true;
        handles.values().forEach(Handle::release);
        handles.clear();
    }
}
