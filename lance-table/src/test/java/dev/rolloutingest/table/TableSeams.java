package dev.rolloutingest.table;

import dev.rolloutingest.table.maintenance.MaintenanceSeams;
import dev.rolloutingest.table.maintenance.TableMaintenance;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.merge.MergeRound;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * Test scope's way into a table's seams, as a crash or a concurrent change would reach it: merge commits failing at a
 * stage, dataset writes failing for some rows, a compaction paused before its commits, and a table's merge rounds
 * driven a step at a time. Other modules' tests reach it through this module's test jar.
 */
public final class TableSeams {
    private TableSeams() {}

    /** {@code fault} runs at each stage of the table's merge commits and throws to fail one there; null restores. */
    public static void failMergeCommitsAt(RolloutTable table, Consumer<CommitStage> fault) {
        table.failMergeCommitsAt(fault);
    }

    /** Every dataset write whose rows make {@code fault} return a message fails with it; null restores. */
    public static void failDatasetWrites(RolloutTable table, Function<VectorSchemaRoot, String> fault) {
        table.failDatasetWrites(fault);
    }

    /** A compaction that runs {@code beforeCommit} before it commits and {@code beforeKeyIndexRebuild} before its index. */
    public static TableMaintenance.CompactionResult compact(
            RolloutTable table, long targetRowsPerFragment, Runnable beforeCommit, Runnable beforeKeyIndexRebuild) {
        return MaintenanceSeams.compact(
                table.maintenance(), targetRowsPerFragment, beforeCommit, beforeKeyIndexRebuild);
    }

    /** The table's merge rounds, whose steps a test drives one at a time. */
    public static MergeRound mergeRound(RolloutTable table) {
        return table.mergeRound();
    }
}
