package dev.rolloutingest.table.storage;

import org.lance.Session;

/**
 * One lance-core index and metadata cache (3/4 and 1/4 of its bytes) for every table of a catalog: the tables' reads
 * share one budget, however many tables a process opens, instead of a cache each. lance-core keys its caches by
 * dataset path, so tables sharing one never see each other's entries.
 */
public final class SharedLanceCache implements AutoCloseable {
    private final Session session;
    private final long bytes;

    public SharedLanceCache(long bytes) {
        this.bytes = bytes;
        this.session = LanceIo.session(bytes);
    }

    Session session() {
        return session;
    }

    public long bytes() {
        return bytes;
    }

    /** After every table that uses it is closed. */
    @Override
    public void close() {
        session.close();
    }
}
