package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableSeams;
import java.util.Collection;
import java.util.List;

/**
 * The steps of a merge round one at a time, on the calling thread, for tests that look between them or need a round
 * of exactly these shards; everything else merges through {@link TableMerges}.
 */
public final class MergeSteps {
    private MergeSteps() {}

    /** What each shard would merge now, within these limits. */
    public static List<MergePlan> plan(
            RolloutTable table, Collection<String> shards, int maxGenerations, long maxBytes) {
        return TableSeams.mergeRound(table)
                .plan(shards.stream()
                        .map(s -> MergeRequest.of(s).limits(maxGenerations, maxBytes))
                        .toList());
    }

    public static PreparedMerge prepare(RolloutTable table, MergePlan plan) {
        return TableSeams.mergeRound(table).prepare(plan);
    }

    /** Commits the prepared shards as the table's committer would; the table's reads see it at once. */
    public static RoundResult commit(RolloutTable table, List<PreparedMerge> prepared) {
        try {
            return TableSeams.mergeRound(table).commit(prepared);
        } finally {
            table.merges().committed();
        }
    }

    /** Plans, prepares and commits one round of exactly these shards. */
    public static RoundResult round(RolloutTable table, Collection<String> shards, int maxGenerations, long maxBytes) {
        return commit(
                table,
                plan(table, shards, maxGenerations, maxBytes).stream()
                        .map(p -> prepare(table, p))
                        .toList());
    }
}
