package dev.rolloutingest.table;

import dev.rolloutingest.table.merge.MergeCapacity;
import dev.rolloutingest.table.storage.SharedLanceCache;

/**
 * What the tables one process opens share, so their number does not multiply memory or threads: one lance-core cache
 * and one merge capacity (preparers and rounds in flight, served in turn).
 */
public record SharedByTables(SharedLanceCache cache, MergeCapacity merges) implements AutoCloseable {
    /** After every table that uses them is closed. */
    @Override
    public void close() {
        merges.close();
        cache.close();
    }
}
