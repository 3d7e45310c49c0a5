package dev.rolloutingest.table;

/**
 * Limits of the table's reads and merges. The apps' config classes map their keys onto these.
 *
 * @param pendingWarnGenerations ROLLOUT_WAL_PENDING_WARN_GENERATIONS: warn once per shard per read at
 *     this many pending generations; 0 disables the warn (never the metric)
 * @param pendingMaxGenerations ROLLOUT_WAL_PENDING_MAX_GENERATIONS: a read fails fast above this many
 *     pending generations in one shard instead of opening them all; 0 disables the cap
 * @param mergeConflictRetries commit retries when merges of other shards move the base manifest
 * @param maxListLimit the largest page a list read returns
 */
public record TableSettings(int pendingWarnGenerations, int pendingMaxGenerations, int mergeConflictRetries,
        int maxListLimit) {
    public static final String PENDING_WARN_KEY = "ROLLOUT_WAL_PENDING_WARN_GENERATIONS";
    public static final String PENDING_MAX_KEY = "ROLLOUT_WAL_PENDING_MAX_GENERATIONS";

    public static final TableSettings DEFAULTS = new TableSettings(256, 2048, 20, 10_000);

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
    }

    public TableSettings withPendingLimits(int warn, int max) {
        return new TableSettings(warn, max, mergeConflictRetries, maxListLimit);
    }
}
