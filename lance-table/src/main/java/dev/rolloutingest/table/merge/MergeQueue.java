package dev.rolloutingest.table.merge;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * The requests of a table's merges waiting for a round, per shard in the order first asked, and the shards in a round.
 * A shard is in one round at a time: a plan made while it is in one would read the old watermark.
 *
 * <p>Guarded by its own lock, which {@link TableMerges} takes while holding its own (never the other way round), so
 * taking a round's shards and marking a round as being prepared are one step.
 */
final class MergeQueue {
    /** A request and the future its caller waits on. */
    record Waiting(MergeRequest request, CompletableFuture<MergeResult> done) {}

    private final LinkedHashMap<String, List<Waiting>> waiting = new LinkedHashMap<>();
    /** The shards in a round, each with the round's end. */
    private final Map<String, CompletableFuture<Void>> inRound = new LinkedHashMap<>();

    synchronized void add(MergeRequest request, CompletableFuture<MergeResult> done) {
        waiting.computeIfAbsent(request.shard(), s -> new ArrayList<>()).add(new Waiting(request, done));
    }

    /**
     * Takes every waiting shard not in a round into a round that ends with {@code ended}; requests their callers
     * withdrew are dropped. Empty when no shard is ready.
     */
    synchronized Map<String, List<Waiting>> take(CompletableFuture<Void> ended) {
        Map<String, List<Waiting>> batch = new LinkedHashMap<>();
        Iterator<Map.Entry<String, List<Waiting>>> it = waiting.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<String, List<Waiting>> entry = it.next();
            if (inRound.containsKey(entry.getKey())) {
                continue;
            }
            it.remove();
            List<Waiting> live = new ArrayList<>(entry.getValue());
            live.removeIf(w -> w.done().isDone()); // withdrawn by its caller
            if (!live.isEmpty()) {
                batch.put(entry.getKey(), live);
            }
        }
        batch.keySet().forEach(shard -> inRound.put(shard, ended));
        return batch;
    }

    /** A shard past the round's byte budget waits for the next round, ahead of shards asked for later. */
    synchronized void requeue(String shard, List<Waiting> requests) {
        inRound.remove(shard);
        List<Waiting> later = waiting.remove(shard);
        List<Waiting> all = new ArrayList<>(requests);
        if (later != null) {
            all.addAll(later);
        }
        waiting.put(shard, all);
    }

    /** The round of these shards ended. */
    synchronized void leave(Collection<String> shards) {
        shards.forEach(inRound::remove);
    }

    /** Completes once no round holds any of {@code shards} (see {@link TableMerges#settled}). */
    synchronized CompletableFuture<Void> settled(Predicate<String> shards) {
        return CompletableFuture.allOf(inRound.entrySet().stream()
                .filter(e -> shards.test(e.getKey()))
                .map(Map.Entry::getValue)
                .distinct()
                .toArray(CompletableFuture[]::new));
    }

    /** Every request still waiting, taken out (the merges are stopping). */
    synchronized List<Waiting> drain() {
        List<Waiting> drained = new ArrayList<>();
        waiting.values().forEach(drained::addAll);
        waiting.clear();
        return drained;
    }

    /** Completes when every round now in flight has ended. */
    synchronized CompletableFuture<Void> inFlight() {
        return CompletableFuture.allOf(inRound.values().stream().distinct().toArray(CompletableFuture[]::new));
    }

    /** Completes the requests with the pass's result, or with {@code error} when it is not null. */
    static void answer(List<Waiting> requests, MergeResult result, Throwable error) {
        for (Waiting w : requests) {
            if (error == null) {
                w.done().complete(result);
            } else {
                w.done().completeExceptionally(error);
            }
        }
    }

    static void failAll(Map<String, List<Waiting>> batch, Throwable error) {
        batch.values().forEach(requests -> answer(requests, null, error));
    }
}
