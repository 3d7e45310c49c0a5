package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.merge.TableMerges;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiPredicate;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The merges this process asked of its tables, by store key ({@link MergeTables#key}): which shards have a pass
 * running, and the finished passes waiting for the task that owns the shard to apply them on its own thread (stores,
 * events, cooldowns). The passes themselves are the tables' ({@link TableMerges}); this is the Kafka side's bookkeeping.
 */
public final class ShardMerges {
    private static final Logger log = LoggerFactory.getLogger(ShardMerges.class);

    /**
     * A finished pass of a shard: its result, or the error that failed it.
     *
     * @param duration from the request to its result, the wait for a round included
     */
    public record Outcome(String shard, MergeTrigger trigger, MergeResult result, Throwable error, Duration duration) {
        public boolean failed() {
            return error != null;
        }

        /** The table could not be read or written (its store down, or the round failed as a whole): no cooldown. */
        public boolean tableUnavailable() {
            return failed() && TableMerges.tableUnavailable(error);
        }
    }

    private final MergeMetrics metrics;
    private final int continueAtLeftover;
    private final Consumer<MergeResult> afterPass;
    /** Passes in flight per key, automatic and manual. */
    private final Map<String, Integer> running = new ConcurrentHashMap<>();
    /** Keys a task of this process let go of: no continuation of theirs until asked again. */
    private final Set<String> released = ConcurrentHashMap.newKeySet();

    private final Map<String, CompletableFuture<MergeResult>> requested = new ConcurrentHashMap<>();
    private final Map<String, Queue<Outcome>> outcomes = new ConcurrentHashMap<>();

    /**
     * @param continueAtLeftover an automatic pass that leaves at least this many generations pending asks for the
     *     shard's next pass at once (0 = never): under load a shard does not wait for its task's next check
     * @param afterPass runs on the committer after each pass that merged something, before its outcome is queued
     */
    public ShardMerges(MergeMetrics metrics, int continueAtLeftover, Consumer<MergeResult> afterPass) {
        this.metrics = metrics;
        this.continueAtLeftover = continueAtLeftover;
        this.afterPass = afterPass;
    }

    /** Whether a pass of the shard (automatic or manual) is in flight. */
    public boolean running(String key) {
        return running.containsKey(key);
    }

    private void started(String key) {
        running.merge(key, 1, Integer::sum);
    }

    private void ended(String key) {
        running.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
    }

    /** Asks for an automatic pass of the shard; false when a pass of it is in flight already. */
    public boolean submit(String key, RolloutTable table, String shard, MergeTrigger trigger) {
        if (running.putIfAbsent(key, 1) != null) {
            return false;
        }
        released.remove(key);
        request(key, table, shard, trigger);
        return true;
    }

    private void request(String key, RolloutTable table, String shard, MergeTrigger trigger) {
        long asked = System.nanoTime();
        CompletableFuture<MergeResult> pass = table.merges().request(MergeRequest.of(shard));
        requested.put(key, pass);
        pass.whenComplete((result, error) -> {
            if (error instanceof CancellationException) {
                // withdrawn by a task letting go of the shard; if its round ran anyway, the next owner's reconcile
                // announces what it merged
                requested.remove(key, pass);
                ended(key);
                return;
            }
            Outcome outcome = finished(table, shard, trigger, result, error, asked);
            boolean more = !outcome.failed()
                    && continueAtLeftover > 0
                    && result.mergedAnything()
                    && result.leftover() >= continueAtLeftover
                    && !released.contains(key);
            queue(key, outcome);
            if (more) {
                request(key, table, shard, trigger); // still running: the task leaves the asking to us
            } else {
                requested.remove(key, pass);
                ended(key);
            }
        });
    }

    /**
     * A manual pass: never gated, served in the next round; its outcome is also applied by the task that owns the
     * shard (its event says MANUAL).
     */
    public CompletableFuture<Outcome> manual(String key, RolloutTable table, String shard) {
        long asked = System.nanoTime();
        started(key); // its task leaves the shard's announcements to it meanwhile
        return table.merges().request(MergeRequest.of(shard)).handle((result, error) -> {
            Outcome outcome = finished(table, shard, MergeTrigger.MANUAL, result, error, asked);
            queue(key, outcome);
            ended(key);
            return outcome;
        });
    }

    private Outcome finished(
            RolloutTable table,
            String shard,
            MergeTrigger trigger,
            MergeResult result,
            Throwable error,
            long askedNanos) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        Outcome outcome = new Outcome(shard, trigger, result, cause, Duration.ofNanos(System.nanoTime() - askedNanos));
        String name = trigger.name().toLowerCase(Locale.ROOT);
        if (cause == null) {
            if (result.mergedAnything()) {
                afterPass.accept(result);
            }
            metrics.pass(name, result.mergedAnything() ? "success" : "empty", outcome.duration());
            metrics.merged(result.mergedGenerations().size());
        } else {
            metrics.pass(name, "failure", outcome.duration());
            log.warn(
                    "Table {} shard {}: {} merge failed{}: {}",
                    table.location(),
                    shard,
                    name,
                    outcome.tableUnavailable() ? " (table unavailable)" : "",
                    cause.getMessage());
        }
        return outcome;
    }

    private void queue(String key, Outcome outcome) {
        outcomes.computeIfAbsent(key, k -> new ConcurrentLinkedQueue<>()).add(outcome);
    }

    /** Finished passes of a shard, oldest first, removed from the queue. */
    public List<Outcome> drain(String key) {
        Queue<Outcome> queue = outcomes.get(key);
        List<Outcome> drained = new ArrayList<>();
        if (queue != null) {
            for (Outcome o; (o = queue.poll()) != null; ) {
                drained.add(o);
            }
        }
        return drained;
    }

    /**
     * Lets go of the shards a task no longer owns (revoked or closed): their passes not yet in a round are withdrawn,
     * and a round that holds one of them is waited for, at most {@code wait}, so the shard's next owner does not commit
     * beside it. Its commits are fenced either way; this spares the new owner a refused commit and the round's work.
     */
    void release(List<MergeTables.Merging> tables, BiPredicate<String, String> owned, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        for (MergeTables.Merging merging : tables) {
            String name = merging.name();
            requested.forEach((key, pass) -> {
                MergeTables.TableShard tableShard = MergeTables.parseKey(key);
                if (tableShard.table().equals(name) && owned.test(name, tableShard.shard())) {
                    released.add(key);
                    pass.cancel(false); // withdrawn unless its round is planned already
                }
            });
            try {
                merging.table()
                        .merges()
                        .settled(shard -> owned.test(name, shard))
                        .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (TimeoutException e) {
                log.warn(
                        "Table {}: a merge round still holds shards this task let go of after {} ms; its commits are"
                                + " fenced, the new owner's are refused or refuse it",
                        merging.table().location(),
                        wait.toMillis());
            } catch (ExecutionException e) {
                // the round failed: it holds nothing any more
            }
        }
    }
}
