package dev.rolloutingest.table.maintenance;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.lance.compaction.Compaction;
import org.lance.compaction.CompactionOptions;
import org.lance.compaction.CompactionPlan;
import org.lance.compaction.CompactionTask;
import org.lance.compaction.RewriteResult;
import org.lance.compaction.TaskData;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A table's upkeep: compaction of the base, its key index, the drop of old deletes, garbage collection. Each runs
 * beside merges and reads and may be called from any thread; merge-workers run it on a schedule.
 */
public final class TableMaintenance {
    private static final Logger log = LoggerFactory.getLogger(TableMaintenance.class);

    /** Fragments of the base table before and after a compaction. */
    public record CompactionResult(int fragmentsBefore, int fragmentsAfter) {}

    /**
     * What bringing the record_id index up to date did: rebuilt (the first build, or after a compaction) or took
     * the unindexed fragments up (optimized); segments of the index after it.
     */
    public record IndexResult(
            boolean rebuilt, boolean optimized, int fragments, long unindexedRowsBefore, int segments, long millis) {}

    /** Generations whose folders were deleted, and folders left because they are not yet old enough. */
    public record GcResult(int deletedGenerations, int deletedUnsealedFolders, long oldBaseVersionsRemoved) {}

    /** How many deletes left the base, and the ingest time below which they had to lie. */
    public record DropResult(long dropped, Instant cutoff) {}

    private final LanceIo lance;
    private final KeyIndex keyIndex;
    private final DeleteRetention deletes;
    private final GarbageCollection garbage;
    private final int commitAttempts;
    private final Runnable afterChange;

    /**
     * {@code commitAttempts}: fenced commits tried when merges land first; {@code afterChange} runs after each operation
     * that may have changed the base (the table's read catalog lets go of what it knew).
     */
    public TableMaintenance(
            LanceIo lance, ObjectStore store, GenerationCatalog catalog, int commitAttempts, Runnable afterChange) {
        this.lance = lance;
        this.keyIndex = new KeyIndex(lance);
        this.deletes = new DeleteRetention(lance, store, catalog);
        this.garbage = new GarbageCollection(lance, store, catalog);
        this.commitAttempts = commitAttempts;
        this.afterChange = afterChange;
    }

    /** Compacts the base table into fragments of about {@code targetRowsPerFragment} rows, then rebuilds the key index. */
    public CompactionResult compact(long targetRowsPerFragment) {
        return compact(targetRowsPerFragment, () -> {}, () -> {});
    }

    /**
     * Compacts the base table, then rebuilds the record_id index. lance-core 7.0.0 aborts the JVM ("An index
     * existed with no fields") when compacting a table with MemWAL initialised unless the index remap is
     * deferred, so it always is; and after a deferred-remap compaction, optimizing the index silently drops
     * the rewritten fragments' rows from it (lance-format/lance#9270), so the index is rebuilt instead.
     *
     * <p>The fragment appends of new keys fence on ({@link FencedCommit#fence}) is left out of the plan: a
     * rewrite of it would be preempted by every append committed while the compaction ran, and under steady
     * merging the compaction would never land.
     *
     * <p>For tests: {@code beforeCommit} runs once the fragments are rewritten, before the compaction commits;
     * {@code beforeKeyIndexRebuild} once the index rebuild has read the compacted version, before it commits.
     */
    CompactionResult compact(long targetRowsPerFragment, Runnable beforeCommit, Runnable beforeKeyIndexRebuild) {
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    return compactOnce(targetRowsPerFragment, beforeCommit, beforeKeyIndexRebuild);
                } catch (CompactedMeanwhile e) {
                    if (attempt >= COMPACTION_ATTEMPTS) {
                        throw new RolloutTableException.Contended(
                                lance.location().uri(),
                                "a compaction was preempted " + attempt + " times in a row by other compactions of"
                                        + " its fragments; the next one plans afresh: " + e.getMessage());
                    }
                    log.info(
                            "Table {}: another compaction of the same fragments landed first ({}); planning again on"
                                    + " the newer base",
                            lance.location(),
                            e.getMessage());
                }
            }
        } finally {
            afterChange.run();
        }
    }

    /**
     * Compactions planned again when another compaction of their fragments landed first: that one did the work, the
     * next plan finds what is left. A commit preempted by anything else (a round that deleted rows in a rewritten
     * fragment) fails as before, and the upkeep's cooldown spaces the next try: rewriting again at once would lose
     * to the next round just the same.
     */
    static final int COMPACTION_ATTEMPTS = 3;

    /** The compaction's commit was refused because another compaction (a {@code Rewrite}) landed first. */
    private static final class CompactedMeanwhile extends RuntimeException {
        CompactedMeanwhile(RuntimeException cause) {
            super(cause.getMessage(), cause);
        }
    }

    private CompactionResult compactOnce(
            long targetRowsPerFragment, Runnable beforeCommit, Runnable beforeKeyIndexRebuild) {
        try (Dataset base = lance.openBase()) {
            List<Fragment> listed = base.getFragments();
            int before = listed.size();
            if (listed.isEmpty()) {
                return new CompactionResult(0, 0);
            }
            int fence = FencedCommit.fence(listed).getId();
            CompactionOptions options = compactionOptions(targetRowsPerFragment);
            CompactionPlan plan = Compaction.planCompaction(base, options);
            List<RewriteResult> rewritten = new ArrayList<>();
            for (CompactionTask task : plan.getCompactionTasks()) {
                List<FragmentMetadata> planned = task.getTaskData().getFragments();
                List<FragmentMetadata> fragments =
                        planned.stream().filter(f -> f.getId() != fence).toList();
                if (fragments.isEmpty() || (fragments.size() == 1 && planned.size() > 1)) {
                    continue; // only the fence, or one fragment left that the plan meant to join with it
                }
                rewritten.add(
                        new CompactionTask(new TaskData(fragments), plan.getReadVersion(), options).execute(base));
            }
            if (rewritten.isEmpty()) {
                return new CompactionResult(before, before);
            }
            beforeCommit.run();
            try {
                Compaction.commitCompaction(base, rewritten, options);
            } catch (RuntimeException e) {
                if (FencedCommit.isPreempted(e)
                        && String.valueOf(e.getMessage()).contains("transaction Rewrite")) {
                    throw new CompactedMeanwhile(e);
                }
                throw e;
            }
            int fragments;
            try (Dataset after = lance.openBase()) {
                fragments = after.getFragments().size();
                log.info("Table {}: compacted {} fragments into {}", lance.location(), before, fragments);
            }
            keyIndex.rebuild(beforeKeyIndexRebuild);
            return new CompactionResult(before, fragments);
        }
    }

    /** Creates the record_id index when the table has none (tables made before it existed, or new ones). */
    public void ensureKeyIndex() {
        keyIndex.ensure();
    }

    /** Brings the record_id index up to date with every fragment merges added (a rebuild after a compaction). */
    public IndexResult optimizeKeyIndex() {
        return optimizeKeyIndex(KeyIndexTiers.DEFAULT);
    }

    /** Brings the record_id index up to date once more rows wait for it than {@code tiers} allows. */
    public IndexResult optimizeKeyIndex(KeyIndexTiers tiers) {
        try {
            return keyIndex.optimize(tiers);
        } finally {
            afterChange.run();
        }
    }

    /**
     * Drops the deletes older than {@code retention} that no pending value can reach (see {@link DeleteRetention}),
     * then compacts those kept once they are spread over many fragments.
     */
    public DropResult dropDeletes(Duration retention) {
        try {
            DropResult dropped = deletes.drop(retention, commitAttempts);
            deletes.compactKept();
            return dropped;
        } finally {
            afterChange.run();
        }
    }

    /**
     * Deletes merged generations' folders (those a reader may still open stay for {@code grace}) and base versions
     * older than twice the grace.
     */
    public GcResult collectGarbage(Duration grace) {
        try {
            return garbage.collect(grace);
        } finally {
            afterChange.run();
        }
    }

    public static CompactionOptions compactionOptions(long targetRowsPerFragment) {
        return CompactionOptions.builder()
                .withDeferIndexRemap(true)
                .withTargetRowsPerFragment(targetRowsPerFragment)
                .build();
    }
}
