package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeQueue.Waiting;
import java.time.Duration;
import java.util.ArrayList;
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
import org.lance.Dataset;
import org.lance.Fragment;
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
 *
 * <p>The requests wait in a {@link MergeQueue}; a round is planned and prepared by the {@link RoundPreparer} and
 * answers its requests as a {@link PreparedRound}. Over 300 lines because this class is both the table's merge API
 * and the one owner of a round's steps (start, prepare, commit, end, close), which share one lock over whether a round
 * is being prepared and whether the merges are stopping.
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

    private final String uri;
    private final MergeRound merge;
    private final MergeCapacity capacity;
    private final boolean ownsCapacity;
    private final MergeQueue queue = new MergeQueue();
    private final RoundPreparer preparer;
    private final Runnable afterCommit;
    /** The table's one committer: commits run here, one at a time, in the order their rounds were prepared. */
    private final ThreadPoolExecutor lane;

    // Guarded by this.
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
        this.preparer = new RoundPreparer(merge, capacity, settings, queue);
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
                    done.completeExceptionally(stopping());
                } else {
                    queue.add(request, done);
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
    public CompletableFuture<Void> settled(Predicate<String> shards) {
        return queue.settled(shards);
    }

    public RoundSummary lastRound() {
        return lastRound;
    }

    /** Whether the table's committer thread is running (it stops when idle; tests and the resident-tables bench). */
    public boolean committerRunning() {
        return lane.getPoolSize() > 0;
    }

    /**
     * Brings the committer's key filter, and its book of key addresses once filled, up to the base's latest version, as
     * the next commit would: after rows landed in the base another way (a bench's plain appends beside its rounds).
     */
    public void catchUp() {
        try (Dataset base = merge.lance().openBase()) {
            List<Fragment> fragments = base.getFragments();
            merge.baseKeys().catchUp(base, fragments);
            merge.keyAddresses().catchUp(base, fragments);
        }
    }

    /**
     * The background build of the table's file of every base key's address under way, or the last one (a bench waits
     * for it before it times rounds).
     */
    public CompletableFuture<Void> keyAddressFileBuild() {
        return merge.keyAddresses().fileBuild();
    }

    /** The capacity this table's rounds take their turns and preparers from. */
    public MergeCapacity capacity() {
        return capacity;
    }

    /** Plans a round from the waiting shards not in a round, unless one is being prepared already. */
    private void startRound() {
        Map<String, List<Waiting>> batch;
        CompletableFuture<Void> ended = new CompletableFuture<>();
        long round;
        synchronized (this) {
            if (preparing || closing) {
                return;
            }
            batch = queue.take(ended);
            if (batch.isEmpty()) {
                return;
            }
            preparing = true;
            round = ++rounds;
        }
        AtomicBoolean committing = new AtomicBoolean();
        capacity.admit()
                .thenComposeAsync(granted -> prepareRound(round, batch), capacity.preparers())
                .thenAcceptAsync(prepared -> commitRound(prepared, committing), lane)
                .whenComplete((nothing, error) -> endRound(batch, ended, committing.get(), error));
    }

    /** Plans and prepares the round ({@link RoundPreparer}), unless the merges began stopping before its turn. */
    private CompletableFuture<PreparedRound> prepareRound(long round, Map<String, List<Waiting>> batch) {
        synchronized (this) {
            if (closing) { // its turn came after close began: nothing is read
                throw stopping();
            }
        }
        return preparer.prepare(round, batch);
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
            MergeQueue.failAll(round.batch(), stopping());
            return;
        }
        RoundResult result;
        try {
            result = merge.commit(round.prepared());
        } finally {
            committed();
        }
        RoundSummary summary = round.summary(result);
        lastRound = summary;
        merge.meters()
                .round(summary.shards(), result.commits(), result.duration(), Duration.ofNanos(round.prepareNanos()));
        if (summary.rows() > 0 || summary.failedShards() > 0) {
            log.info(
                    "Merge round {}: {} shards ({} failed), {} rows, prepared in {} ms, {} commit(s) in {} ms (table {})",
                    summary.round(),
                    summary.shards(),
                    summary.failedShards(),
                    summary.rows(),
                    summary.prepareMs(),
                    summary.commits(),
                    summary.commitMs(),
                    uri);
        }
        round.answer(result); // last: whoever waits for a pass sees its round summed up
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
            MergeQueue.failAll(batch, cause instanceof RoundFailed ? cause : new RoundFailed(uri, cause));
        }
        synchronized (this) {
            if (!committed) {
                preparing = false; // failed before its commit: the next round may be planned
            }
            queue.leave(batch.keySet());
        }
        capacity.release();
        ended.complete(null);
        startRound();
    }

    /** What a request or round the merges refuse while stopping fails with. */
    private RoundFailed stopping() {
        return new RoundFailed(uri, new IllegalStateException("merges are stopping"));
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
        List<Waiting> refused;
        CompletableFuture<Void> inFlight;
        synchronized (this) {
            closing = true;
            refused = queue.drain();
            inFlight = queue.inFlight();
        }
        MergeQueue.answer(refused, null, stopping());
        try {
            inFlight.get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn("Table {}: a merge round still runs after a minute of closing: {}", uri, e.toString());
        }
        lane.shutdown();
        merge.keyAddresses().close();
        if (ownsCapacity) {
            capacity.close();
        }
    }
}
