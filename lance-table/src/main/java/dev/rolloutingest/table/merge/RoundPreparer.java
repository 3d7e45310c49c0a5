package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeQueue.Waiting;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Plans a round of a table's merges and prepares its shards side by side on the process's preparers (reading and
 * de-duplicating their generations: {@link MergePreparer}). A round holds at most {@code rollout.merge.round.max.bytes}
 * of sealed input; shards past it wait for the next round, so memory is bounded by the rounds in flight.
 */
final class RoundPreparer {
    private final MergeRound merge;
    private final MergeCapacity capacity;
    private final TableSettings settings;
    private final MergeQueue queue;

    RoundPreparer(MergeRound merge, MergeCapacity capacity, TableSettings settings, MergeQueue queue) {
        this.merge = merge;
        this.capacity = capacity;
        this.settings = settings;
        this.queue = queue;
    }

    /** Plans the round and prepares its shards side by side on the capacity's preparers. */
    CompletableFuture<PreparedRound> prepare(long round, Map<String, List<Waiting>> batch) {
        long started = System.nanoTime();
        List<MergePlan> plans = merge.plan(passes(batch));
        // The round's byte budget: shards past it wait for the next round (the first always goes).
        long roundMaxBytes = settings.mergeRoundMaxBytes();
        List<MergePlan> taken = new ArrayList<>();
        long bytes = 0;
        for (MergePlan plan : plans) {
            if (!taken.isEmpty() && bytes + plan.bytes() > roundMaxBytes) {
                queue.requeue(plan.shard(), batch.remove(plan.shard()));
                continue;
            }
            taken.add(plan);
            bytes += plan.bytes();
        }
        Map<String, CompletableFuture<PreparedMerge>> preparing = new LinkedHashMap<>();
        for (MergePlan plan : taken) {
            preparing.put(plan.shard(), CompletableFuture.supplyAsync(() -> merge.prepare(plan), capacity.preparers()));
        }
        return CompletableFuture.allOf(preparing.values().toArray(CompletableFuture[]::new))
                .handle((all, anyFailed) -> {
                    List<PreparedMerge> ready = new ArrayList<>();
                    Map<String, Throwable> unreadable = new LinkedHashMap<>();
                    preparing.forEach((shard, future) -> {
                        try {
                            ready.add(future.join());
                        } catch (CompletionException e) {
                            if (e.getCause() instanceof Error fatal) {
                                throw fatal; // an OutOfMemoryError or the like is not the shard's failure
                            }
                            unreadable.put(shard, e.getCause());
                        }
                    });
                    return new PreparedRound(
                            round, batch, taken, ready, unreadable, started, System.nanoTime() - started);
                });
    }

    /**
     * Each shard's pass: the first request's limits (the table's where it named none), bounded by the lowest bound any
     * of its requests set.
     */
    private List<MergeRequest> passes(Map<String, List<Waiting>> batch) {
        List<MergeRequest> passes = new ArrayList<>();
        batch.forEach((shard, requests) -> {
            MergeRequest first = requests.get(0).request();
            MergeRequest pass = first.limits(
                    first.maxGenerations() == MergeRequest.TABLE_LIMIT
                            ? settings.mergeMaxGenerations()
                            : first.maxGenerations(),
                    first.maxBytes() == MergeRequest.TABLE_LIMIT ? settings.mergeMaxBytes() : first.maxBytes());
            for (Waiting w : requests) {
                long upTo = w.request().upTo();
                if (upTo != -1L && (!pass.bounded() || Long.compareUnsigned(upTo, pass.upTo()) < 0)) {
                    pass = pass.upTo(upTo);
                }
            }
            passes.add(pass);
        });
        return passes;
    }
}
