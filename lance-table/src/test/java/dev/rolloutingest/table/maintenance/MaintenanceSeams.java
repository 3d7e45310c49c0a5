package dev.rolloutingest.table.maintenance;

/** Test scope's way into a compaction's pauses (see {@code TableSeams}). */
public final class MaintenanceSeams {
    private MaintenanceSeams() {}

    /** A compaction that runs {@code beforeCommit} before it commits and {@code beforeKeyIndexRebuild} before its index. */
    public static TableMaintenance.CompactionResult compact(
            TableMaintenance maintenance,
            long targetRowsPerFragment,
            Runnable beforeCommit,
            Runnable beforeKeyIndexRebuild) {
        return maintenance.compact(targetRowsPerFragment, beforeCommit, beforeKeyIndexRebuild);
    }
}
