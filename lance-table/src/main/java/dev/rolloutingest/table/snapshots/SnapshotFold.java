package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.merge.TableMerges;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.lance.Dataset;

/**
 * Folds what is pending up to a snapshot's cut into the base. The folds are the table's merges ({@link TableMerges}),
 * within its pass limits, so where a merge-worker runs in this process the shard still has one committer; a commit of
 * another process's is fenced and refuses a shard merged meanwhile.
 */
final class SnapshotFold {
    /** Passes in a row that may move nothing before the fold gives up (another committer holding the shard). */
    static final int MAX_PASSES_WITHOUT_PROGRESS = 50;

    /** How long one fold pass may take, waiting for its round included. */
    static final long FOLD_PASS_TIMEOUT_MINUTES = 10;

    private final LanceIo lance;
    private final TableMerges merges;

    SnapshotFold(LanceIo lance, TableMerges merges) {
        this.lance = lance;
        this.merges = merges;
    }

    /** Every shard of {@code targets} merged up to its target generation. */
    void foldAll(Map<String, Long> targets) {
        for (Map.Entry<String, Long> target : targets.entrySet()) {
            fold(target.getKey(), target.getValue());
        }
    }

    /**
     * Merges the shard's generations up to {@code target}, unless already merged (by anyone). A pass merges nothing
     * when another committer (the merge-worker) took the same generations first; the watermark then moves without
     * it, so only passes after which neither happened count against the bound.
     */
    private void fold(String shard, long target) {
        int stalled = 0;
        long watermark = watermarks().getOrDefault(shard, 0L);
        while (Long.compareUnsigned(watermark, target) < 0 && target != 0) {
            MergeResult merged = pass(shard, target);
            long now = watermarks().getOrDefault(shard, 0L);
            if (merged.mergedGenerations().isEmpty() && now == watermark) {
                if (++stalled >= MAX_PASSES_WITHOUT_PROGRESS) {
                    throw new RolloutTableException(
                            "Table " + lance.location() + " shard " + shard + ": " + stalled + " merge passes moved"
                                    + " nothing below generation " + target + "; the watermark stays at " + now,
                            null);
                }
                sleepQuietly(100);
            } else {
                stalled = 0;
            }
            watermark = now;
        }
    }

    /** One pass of the table's merges over {@code shard}, taking no generation above {@code upTo}. */
    private MergeResult pass(String shard, long upTo) {
        try {
            return merges.request(MergeRequest.of(shard).upTo(upTo)).get(FOLD_PASS_TIMEOUT_MINUTES, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RolloutTableException("interrupted while folding shard " + shard + " for a snapshot", e);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new RolloutTableException(
                    "Table " + lance.location() + " shard " + shard + " could not be folded for a snapshot: "
                            + cause.getMessage(),
                    cause);
        }
    }

    /** The base's merged watermarks now. */
    Map<String, Long> watermarks() {
        try (Dataset base = lance.openBase()) {
            return MemWalWatermarks.read(base);
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RolloutTableException("interrupted while folding for a snapshot", e);
        }
    }
}
