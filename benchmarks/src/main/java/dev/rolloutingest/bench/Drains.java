package dev.rolloutingest.bench;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.merge.MergeResult;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Drains a backlog through a table's merges as the merge-worker does: each shard is asked for its next pass as soon as
 * the last one left generations behind, so a round is planned from every shard asked for by then.
 */
final class Drains {
    private Drains() {}

    /** Completes once a pass of the shard left nothing pending. */
    static CompletableFuture<Void> shard(RolloutTable table, String shard) {
        return table.merges().request(shard).thenCompose(result -> more(result) ? shard(table, shard) : done());
    }

    /** Drains every shard of {@code shards} side by side and waits for them all. */
    static void shards(RolloutTable table, List<String> shards) {
        CompletableFuture.allOf(shards.stream().map(s -> shard(table, s)).toArray(CompletableFuture[]::new))
                .join();
    }

    private static boolean more(MergeResult result) {
        return result.mergedAnything() && result.leftover() > 0;
    }

    private static CompletableFuture<Void> done() {
        return CompletableFuture.completedFuture(null);
    }
}
