package dev.rolloutingest.table;

/**
 * Limits of the table's reads and merges. The apps' config classes map their keys onto these.
 *
 * @param pendingWarnGenerations ROLLOUT_WAL_PENDING_WARN_GENERATIONS: warn once per shard per read at
 *     this many pending generations; 0 disables the warn (never the metric)
 * @param pendingMaxGenerations ROLLOUT_WAL_PENDING_MAX_GENERATIONS: a read fails fast above this many
 *     pending generations in one shard; 0 disables the cap
 * @param mergeConflictRetries commit retries when merges of other shards move the base manifest
 * @param maxListLimit the largest page a list read returns
 * @param readRefreshMs ROLLOUT_READ_REFRESH_MS: readers see seals and merges of other processes at most this
 *     late (the catalog of seals and the base handle are refreshed at most this often)
 * @param readCacheBytes ROLLOUT_READ_CACHE_BYTES: lance-core's index and metadata caches for reads
 * @param readOpenGenerations ROLLOUT_READ_OPEN_GENERATIONS: pending generation datasets kept open for lookups
 * @param mergeScanJoinMaxBaseRows rollout.merge.scan.join.max.base.rows: merge commits join their source to a base of
 *     at most this many rows by a scan, above it through the record_id index (see MergeJoin); 0 = always
 *     the index
 * @param mergeAppendNewKeys rollout.merge.append.new.keys: merge rows whose keys the base certainly lacks are
 *     appended as new fragments (a commit that costs what it adds); only the others are joined. false = every row
 *     goes through the merge-insert join
 * @param mergeAdoptMinRows rollout.merge.adopt.min.rows (and rollout.merge.adopt.generations): a generation of at
 *     least this many rows, all of them appended, is taken into the base whole, its data files linked (local) or
 *     copied server-side (S3) instead of rewritten; {@link #NEVER_ADOPT} = never. Each adopted generation stays a
 *     fragment of its own until compaction, and every later commit pays for the base's fragment count, so small
 *     generations are written together instead (one fragment a commit)
 */
public record TableSettings(
        int pendingWarnGenerations,
        int pendingMaxGenerations,
        int mergeConflictRetries,
        int maxListLimit,
        long readRefreshMs,
        long readCacheBytes,
        int readOpenGenerations,
        long mergeScanJoinMaxBaseRows,
        boolean mergeAppendNewKeys,
        long mergeAdoptMinRows) {
    public static final String PENDING_WARN_KEY = "ROLLOUT_WAL_PENDING_WARN_GENERATIONS";
    public static final String PENDING_MAX_KEY = "ROLLOUT_WAL_PENDING_MAX_GENERATIONS";

    public static final long DEFAULT_MERGE_SCAN_JOIN_MAX_BASE_ROWS = 2_000_000;

    /** Generations of at least this many rows are adopted by default: a written round holds about as many. */
    public static final long DEFAULT_MERGE_ADOPT_MIN_ROWS = 50_000;

    public static final long NEVER_ADOPT = Long.MAX_VALUE;

    public static final TableSettings DEFAULTS = new TableSettings(
            256,
            2048,
            20,
            10_000,
            1_000,
            256L << 20,
            1024,
            DEFAULT_MERGE_SCAN_JOIN_MAX_BASE_ROWS,
            true,
            DEFAULT_MERGE_ADOPT_MIN_ROWS);

    public TableSettings {
        if (pendingWarnGenerations < 0) {
            throw new IllegalArgumentException(PENDING_WARN_KEY + " must be >= 0, was " + pendingWarnGenerations);
        }
        if (pendingMaxGenerations < 0) {
            throw new IllegalArgumentException(PENDING_MAX_KEY + " must be >= 0, was " + pendingMaxGenerations);
        }
        if (mergeConflictRetries < 0 || maxListLimit <= 0) {
            throw new IllegalArgumentException("mergeConflictRetries must be >= 0 and maxListLimit > 0");
        }
        if (readRefreshMs < 0 || readCacheBytes < (1L << 20) || readOpenGenerations < 0) {
            throw new IllegalArgumentException(
                    "readRefreshMs and readOpenGenerations must be >= 0, readCacheBytes >= 1 MiB");
        }
        if (mergeAdoptMinRows < 0) {
            throw new IllegalArgumentException("mergeAdoptMinRows must be >= 0, was " + mergeAdoptMinRows);
        }
        if (mergeScanJoinMaxBaseRows < 0) {
            throw new IllegalArgumentException(
                    "mergeScanJoinMaxBaseRows must be >= 0, was " + mergeScanJoinMaxBaseRows);
        }
    }

    public TableSettings withPendingLimits(int warn, int max) {
        return new TableSettings(
                warn,
                max,
                mergeConflictRetries,
                maxListLimit,
                readRefreshMs,
                readCacheBytes,
                readOpenGenerations,
                mergeScanJoinMaxBaseRows,
                mergeAppendNewKeys,
                mergeAdoptMinRows);
    }

    public TableSettings withReadRefreshMs(long ms) {
        return new TableSettings(
                pendingWarnGenerations,
                pendingMaxGenerations,
                mergeConflictRetries,
                maxListLimit,
                ms,
                readCacheBytes,
                readOpenGenerations,
                mergeScanJoinMaxBaseRows,
                mergeAppendNewKeys,
                mergeAdoptMinRows);
    }

    public TableSettings withReadCacheBytes(long bytes) {
        return new TableSettings(
                pendingWarnGenerations,
                pendingMaxGenerations,
                mergeConflictRetries,
                maxListLimit,
                readRefreshMs,
                bytes,
                readOpenGenerations,
                mergeScanJoinMaxBaseRows,
                mergeAppendNewKeys,
                mergeAdoptMinRows);
    }

    public TableSettings withReadOpenGenerations(int handles) {
        return new TableSettings(
                pendingWarnGenerations,
                pendingMaxGenerations,
                mergeConflictRetries,
                maxListLimit,
                readRefreshMs,
                readCacheBytes,
                handles,
                mergeScanJoinMaxBaseRows,
                mergeAppendNewKeys,
                mergeAdoptMinRows);
    }

    public TableSettings withMergeScanJoinMaxBaseRows(long rows) {
        return new TableSettings(
                pendingWarnGenerations,
                pendingMaxGenerations,
                mergeConflictRetries,
                maxListLimit,
                readRefreshMs,
                readCacheBytes,
                readOpenGenerations,
                rows,
                mergeAppendNewKeys,
                mergeAdoptMinRows);
    }

    public TableSettings withMergeAppendNewKeys(boolean append) {
        return new TableSettings(
                pendingWarnGenerations,
                pendingMaxGenerations,
                mergeConflictRetries,
                maxListLimit,
                readRefreshMs,
                readCacheBytes,
                readOpenGenerations,
                mergeScanJoinMaxBaseRows,
                append,
                mergeAdoptMinRows);
    }

    /** Whether any generation may be adopted (see {@link #mergeAdoptMinRows}). */
    public boolean mergeAdoptGenerations() {
        return mergeAdoptMinRows != NEVER_ADOPT;
    }

    public TableSettings withMergeAdoptMinRows(long rows) {
        return new TableSettings(
                pendingWarnGenerations,
                pendingMaxGenerations,
                mergeConflictRetries,
                maxListLimit,
                readRefreshMs,
                readCacheBytes,
                readOpenGenerations,
                mergeScanJoinMaxBaseRows,
                mergeAppendNewKeys,
                rows);
    }
}
