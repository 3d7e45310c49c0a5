package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way a table is merged, whoever asks (the merge-worker's triggers, a snapshot's fold, the admin API, the
 * CLI, the benchmarks): {@link #request} a pass over a shard and get its result as a future.
 *
 * <p>Requests are served in rounds: the shards asked for since the last round are planned together, prepared side by
 * side on the process's {@link MergeCapacity} (reading and de-duplicating their generations), and committed together
 * on this table's one committer, a lane of one thread, so commits per second do not grow with the shards and passes of
 * different shards never race for the base manifest. The next round is planned and prepared while this one commits,
 * from every shard asked for by then; a shard still in a round waits for the next (its plan would read the old
 * watermark). A round holds at most {@code rollout.merge.round.max.bytes} of sealed input (shards past it wait), so
 * memory is bounded by the rounds in flight, never by the backlog. A round that cannot be planned or committed as a
 * whole fails its requests with {@link RoundFailed}: the table's problem, not one shard's.
 */
public final class TableMerges implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TableMerges.class);

    /** What the last round did, for /pending and the logs. */
    public record RoundSummary(
            long round,
            int shards,
            int mergedShards,
            int failedShards,
            long rows,
            int commits,
            long commitMs,
            long prepareMs,
            long finishedAtMs) {}

    /** A round that failed as a whole (it could not be planned or committed): the table's problem, not a shard's. */
    public static final class RoundFailed extends RolloutTableException {
        RoundFailed(String tableUri, Throwable cause) {
            super("Table " + tableUri + ": the merge round failed as a whole: " + cause.getMessage(), cause);
        }
    }

    private record Waiting(MergeRequest request, CompletableFuture<MergeResult> done) {}

    /** A round's shards with their plans and prepared rows (or why each could not be prepared). */
    private record PreparedRound(
            long round,
            Map<String, List<Waiting>> batch,
            List<MergePlan> taken,
            List<PreparedMerge> prepared,
            Map<String, Throwable> unreadable,
            long startedNanos,
            long prepareNanos) {}

    private final String uri;
    private final MergeRound merge;
    private final MergeCapacity capacity;
    private final boolean ownsCapacity;
    private final TableSettings settings;
    private final Runnable afterCommit;
    /** The table's one committer: commits run here, one at a time, in the order their rounds were prepared. */
    private final ThreadPoolExecutor lane;

    // Guarded by this.
    private final LinkedHashMap<String, List<Waiting>> waiting = new LinkedHashMap<>();
    /** The shards in a round, each with the round's end. */
    private final Map<String, CompletableFuture<Void>> inRound = new LinkedHashMap<>();
    /** A round is being planned or prepared (not committing yet): at most one, so two rounds hold memory at most. */
    private boolean preparing;

    private boolean closing;
    private long rounds;
    private volatile RoundSummary lastRound;

    TableMerges(
            String uri,
            MergeRound merge,
            MergeCapacity capacity,
            boolean ownsCapacity,
            TableSettings settings,
            Runnable afterCommit) {
        this.uri = uri;
        this.merge = merge;
        this.capacity = capacity;
        this.ownsCapacity = ownsCapacity;
        this.settings = settings;
        this.afterCommit = afterCommit;
        this.lane = MergeCapacity.idleStopping(1, capacity.idleStop(), "merge-commit");
    }

    /** The merges of a table; {@code capacity} null: a capacity of the table's own, from its settings. */
    public static TableMerges of(
            String uri, MergeRound merge, MergeCapacity capacity, TableSettings settings, Runnable afterCommit) {
        boolean own = capacity == null;
        MergeCapacity used = own
                ? new MergeCapacity(
                        settings.mergeThreads(),
                        settings.mergeTablesParallel(),
                        Duration.ofMillis(settings.mergeThreadsIdleStopMs()))
                : capacity;
        return new TableMerges(uri, merge, used, own, settings, afterCommit);
    }

    /** A pass over {@code shard} within the table's limits: {@code request(MergeRequest.of(shard))}. */
    public CompletableFuture<MergeResult> request(String shard) {
        return request(MergeRequest.of(shard));
    }

    /**
     * Asks for a pass: it runs in the next round (after the shard's current one, if any) and the future completes with
     * its result, or fails with what failed it ({@link RoundFailed} when the round failed as a whole). Requests of one
     * shard that wait together are served by one pass, bounded by the lowest {@code upTo} among them. Cancelling the
     * future before its round is planned withdraws the request.
     */
    public CompletableFuture<MergeResult> request(MergeRequest request) {
        return requestAll(List.of(request)).get(0);
    }

    /**
     * {@link #request} and wait for it: for callers with nothing else to do meanwhile (the CLI, tests). Throws what
     * failed the pass.
     */
    public MergeResult pass(MergeRequest request) {
        try {
            return request(request).join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException failure) {
                throw failure;
            }
            if (e.getCause() instanceof Error fatal) {
                throw fatal;
            }
            throw e;
        }
    }

    /**
     * Asks for passes over several shards at once: they wait together, so they share a round unless one of them is in
     * a round already. One future per request, in order.
     */
    public List<CompletableFuture<MergeResult>> requestAll(List<MergeRequest> requests) {
        List<CompletableFuture<MergeResult>> futures = new ArrayList<>();
        synchronized (this) {
            for (MergeRequest request : requests) {
                CompletableFuture<MergeResult> done = new CompletableFuture<>();
                futures.add(done);
                if (closing) {
                    done.completeExceptionally(new RoundFailed(uri, new IllegalStateException("merges are stopping")));
                } else {
                    waiting.computeIfAbsent(request.shard(), s -> new ArrayList<>())
                            .add(new Waiting(request, done));
                }
            }
        }
        startRound();
        return futures;
    }

    /**
     * Completes once no round holds any of {@code shards} (those in a round now; requests still waiting are not
     * waited for: cancel them): how a Kafka task that lets go of its shards keeps their next owner from committing
     * beside it.
     */
    public synchronized CompletableFuture<Void> settled(Predicate<String> shards) {
        return CompletableFuture.allOf(inRound.entrySet().stream()
                .filter(e -> shards.test(e.getKey()))
                .map(Map.Entry::getValue)
                .distinct()
                .toArray(CompletableFuture[]::new));
    }

    public RoundSummary lastRound() {
        return lastRound;
    }

    /** Whether the table's committer thread is running (it stops when idle; tests and the resident-tables bench). */
    public boolean committerRunning() {
        return lane.getPoolSize() > 0;
    }

    /** The capacity this table's rounds take their turns and preparers from. */
    public MergeCapacity capacity() {
        return capacity;
    }

    /** Plans a round from the waiting shards not in a round, unless one is being prepared already. */
    private void startRound() {
        Map<String, List<Waiting>> batch = new LinkedHashMap<>();
        CompletableFuture<Void> ended = new CompletableFuture<>();
        long round;
        synchronized (this) {
            if (preparing || closing) {
                return;
            }
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
            if (batch.isEmpty()) {
                return;
            }
            preparing = true;
            batch.keySet().forEach(shard -> inRound.put(shard, ended));
            round = ++rounds;
        }
        AtomicBoolean committing = new AtomicBoolean();
        capacity.admit()
                .thenComposeAsync(granted -> prepareRound(round, batch), capacity.preparers())
                .thenAcceptAsync(prepared -> commitRound(prepared, committing), lane)
                .whenComplete((nothing, error) -> endRound(batch, ended, committing.get(), error));
    }

    /** Plans the round and prepares its shards side by side on the capacity's preparers. */
    private CompletableFuture<PreparedRound> prepareRound(long round, Map<String, List<Waiting>> batch) {
        long started = System.nanoTime();
        synchronized (this) {
            if (closing) { // its turn came after close began: nothing is read
                throw new RoundFailed(uri, new IllegalStateException("merges are stopping"));
            }
        }
        List<MergePlan> plans = merge.plan(passes(batch));
        // The round's byte budget: shards past it wait for the next round (the first always goes).
        long roundMaxBytes = settings.mergeRoundMaxBytes();
        List<MergePlan> taken = new ArrayList<>();
        long bytes = 0;
        for (MergePlan plan : plans) {
            if (!taken.isEmpty() && bytes + plan.bytes() > roundMaxBytes) {
                requeue(plan.shard(), batch.remove(plan.shard()));
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

    /** On the lane: lets the next round be prepared, then commits this one (or abandons it when closing). */
    private void commitRound(PreparedRound round, AtomicBoolean committing) {
        boolean abandon;
        synchronized (this) {
            committing.set(true);
            preparing = false;
            abandon = closing;
        }
        startRound();
        if (abandon) {
            round.prepared().forEach(PreparedMerge::close);
            failAll(round.batch(), new RoundFailed(uri, new IllegalStateException("merges are stopping")));
            return;
        }
        RoundResult result;
        try {
            result = merge.commit(round.prepared());
        } finally {
            committed();
        }
        long rows = 0;
        List<Runnable> answers = new ArrayList<>();
        for (MergePlan plan : round.taken()) {
            String shard = plan.shard();
            Throwable error = round.unreadable().containsKey(shard)
                    ? round.unreadable().get(shard)
                    : result.failed().get(shard);
            MergeResult merged = result.merged().get(shard);
            if (error == null) {
                rows += merged.rows();
            }
            answers.add(() -> finish(round.batch().get(shard), merged, error));
        }
        int failed = round.unreadable().size() + result.failed().size();
        int shards = round.taken().size();
        lastRound = new RoundSummary(
                round.round(),
                shards,
                shards - failed,
                failed,
                rows,
                result.commits(),
                result.duration().toMillis(),
                round.prepareNanos() / 1_000_000,
                System.currentTimeMillis());
        merge.meters().round(shards, result.commits(), result.duration(), Duration.ofNanos(round.prepareNanos()));
        if (rows > 0 || failed > 0) {
            log.info(
                    "Merge round {}: {} shards ({} failed), {} rows, prepared in {} ms, {} commit(s) in {} ms (table {})",
                    round.round(),
                    shards,
                    failed,
                    rows,
                    round.prepareNanos() / 1_000_000,
                    result.commits(),
                    result.duration().toMillis(),
                    uri);
        }
        answers.forEach(Runnable::run); // last: whoever waits for a pass sees its round summed up
    }

    /** After a commit (or a failed one): the table's reads look again. */
    void committed() {
        afterCommit.run();
    }

    /**
     * Whatever happened, the round ends here: requests it did not answer fail with its error, its shards leave it, its
     * turn goes to the next table, and the next round may start ({@code committed}: this round reached its commit, which
     * let the next one be prepared already).
     */
    private void endRound(
            Map<String, List<Waiting>> batch, CompletableFuture<Void> ended, boolean committed, Throwable error) {
        if (error != null) {
            Throwable cause =
                    error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
            if (cause instanceof Error fatal) {
                log.error("Table {}: a merge round stopped by {}", uri, fatal.toString(), fatal);
            } else {
                log.error("Table {}: a merge round failed as a whole: {}", uri, cause.toString(), cause);
            }
            failAll(batch, cause instanceof RoundFailed ? cause : new RoundFailed(uri, cause));
        }
        synchronized (this) {
            if (!committed) {
                preparing = false; // failed before its commit: the next round may be planned
            }
            batch.keySet().forEach(inRound::remove);
        }
        capacity.release();
        ended.complete(null);
        startRound();
    }

    private void finish(List<Waiting> requests, MergeResult result, Throwable error) {
        for (Waiting w : requests) {
            if (error == null) {
                w.done().complete(result);
            } else {
                w.done().completeExceptionally(error);
            }
        }
    }

    private void failAll(Map<String, List<Waiting>> batch, Throwable error) {
        batch.values().forEach(requests -> finish(requests, null, error));
    }

    /** A shard past the round's byte budget waits for the next round, ahead of shards asked for later. */
    private void requeue(String shard, List<Waiting> requests) {
        synchronized (this) {
            inRound.remove(shard);
            List<Waiting> later = waiting.remove(shard);
            List<Waiting> all = new ArrayList<>(requests);
            if (later != null) {
                all.addAll(later);
            }
            waiting.put(shard, all);
        }
    }

    /**
     * Whether a merge failed because the table could not be read or written (the store down or refusing, or the round
     * failing as a whole): not the shard's fault, so it does not count towards the shard's cooldown.
     */
    public static boolean tableUnavailable(Throwable error) {
        Throwable e =
                error instanceof CompletionException || error instanceof ExecutionException ? error.getCause() : error;
        return e instanceof RoundFailed
                || (!(e instanceof RolloutTableException.GenerationUnreadable)
                        && RolloutTableException.isStorageFailure(e));
    }

    /**
     * Stops: waiting requests fail, a round being prepared is abandoned, a round committing finishes (a round commits
     * or not as a whole), at most a minute.
     */
    @Override
    public void close() {
        List<Waiting> refused = new ArrayList<>();
        CompletableFuture<Void> inFlight;
        synchronized (this) {
            closing = true;
            waiting.values().forEach(refused::addAll);
            waiting.clear();
            inFlight =
                    CompletableFuture.allOf(inRound.values().stream().distinct().toArray(CompletableFuture[]::new));
        }
        finish(refused, null, new RoundFailed(uri, new IllegalStateException("merges are stopping")));
        try {
            inFlight.get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn("Table {}: a merge round still runs after a minute of closing: {}", uri, e.toString());
        }
        lane.shutdown();
        if (ownsCapacity) {
            capacity.close();
        }
    }
}
