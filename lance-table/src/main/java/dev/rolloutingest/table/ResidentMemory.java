package dev.rolloutingest.table;

import dev.rolloutingest.table.merge.MergeRound;
import dev.rolloutingest.table.reads.ReadCatalog;
import java.time.Duration;

/**
 * What a table keeps in memory between uses, and how long it has not been used: a catalog's memory budget lets go of
 * it for the least recently used tables (the next merge or read builds it again).
 */
public final class ResidentMemory {
    private final MergeRound merge;
    private final ReadCatalog readCatalog;
    private volatile long lastUsedNanos = System.nanoTime();

    ResidentMemory(MergeRound merge, ReadCatalog readCatalog) {
        this.merge = merge;
        this.readCatalog = readCatalog;
    }

    void touch() {
        lastUsedNanos = System.nanoTime();
    }

    /** How long since the table was last written, read or merged through this handle. */
    public Duration idleFor() {
        return Duration.ofNanos(System.nanoTime() - lastUsedNanos);
    }

    /**
     * The merge committer's filter of base keys (~1.8 bytes per key, at least a million keys' worth once it merged),
     * its book of the newest keys' addresses (up to {@code rollout.merge.key.addresses.bytes}) and what the read
     * catalog keeps (pending seals' key filters, generations' key positions). lance-core's caches are the catalog's
     * shared ones when the table has a catalog.
     */
    public long bytes() {
        return merge.baseKeys().sizeBytes() + merge.keyAddresses().sizeBytes() + readCatalog.residentBytes();
    }

    /** Lets go of {@link #bytes} and of the open base and generation handles; returns the bytes released. */
    public long release() {
        long held = bytes();
        merge.baseKeys().release();
        merge.keyAddresses().release();
        readCatalog.release();
        return held;
    }
}
