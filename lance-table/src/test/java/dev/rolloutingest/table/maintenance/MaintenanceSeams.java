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

    /** The drop of a compaction's row remapping, on its own (the upkeep calls it after an index build). */
    public static void dropRemapping(dev.rolloutingest.table.storage.LanceIo lance) {
        new KeyIndex(lance).dropRemapping();
    }
}
