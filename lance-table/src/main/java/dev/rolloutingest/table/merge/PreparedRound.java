package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.merge.MergeQueue.Waiting;
import dev.rolloutingest.table.merge.TableMerges.RoundSummary;
import java.util.List;
import java.util.Map;

/**
 * A round's shards with their plans and prepared rows (or why each could not be prepared), and what its commit's
 * result tells each shard's requests and the round's summary.
 *
 * @param batch per shard of the round, the requests its pass serves
 * @param taken the plans within the round's byte budget, each shard's pass
 * @param unreadable per shard whose generations could not be read, why
 */
record PreparedRound(
        long round,
        Map<String, List<Waiting>> batch,
        List<MergePlan> taken,
        List<PreparedMerge> prepared,
        Map<String, Throwable> unreadable,
        long startedNanos,
        long prepareNanos) {
    /** Why a taken shard did not merge (unreadable, or failed in the commit); null when it merged. */
    Throwable error(String shard, RoundResult result) {
        return unreadable.containsKey(shard)
                ? unreadable.get(shard)
                : result.failed().get(shard);
    }

    RoundSummary summary(RoundResult result) {
        long rows = 0;
        for (MergePlan plan : taken) {
            if (error(plan.shard(), result) == null) {
                rows += result.merged().get(plan.shard()).rows();
            }
        }
        int failed = unreadable.size() + result.failed().size();
        int shards = taken.size();
        return new RoundSummary(
                round,
                shards,
                shards - failed,
                failed,
                rows,
                result.commits(),
                result.duration().toMillis(),
                prepareNanos / 1_000_000,
                System.currentTimeMillis());
    }

    /** Completes each taken shard's requests with its pass's result or error. */
    void answer(RoundResult result) {
        for (MergePlan plan : taken) {
            String shard = plan.shard();
            MergeQueue.answer(batch.get(shard), result.merged().get(shard), error(shard, result));
        }
    }
}
