package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.merge.MergePlan;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.merge.PreparedMerge;
import dev.rolloutingest.table.merge.RoundResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Merges in rounds, off the stream threads: the shards asked for since the last round are planned
 * together, prepared in parallel on the {@link MergeFleet}'s preparers, shared by all tables (reading and
 * de-duplicating their generations), and committed together by the table's single committer thread, one round at a
 * time, when the fleet grants the table its turn (a bounded number of rounds over all tables, served in turn), so commits per second
 * do not grow with the number of shards and passes of different shards no longer race for the base
 * manifest. A round holds at most {@code rollout.merge.round.max.bytes} of sealed input (the shards over it
 * wait for the next round), so memory is bounded by the round, never by the backlog. Finished shards wait in
 * a per-shard queue until the owning task applies them on its own thread. Table upkeep runs apart, in
 * {@link TableMaintenanceRunner}.
 *
 * <p>Over 300 lines because the planner and committer threads share one lock, request queue and hand-off; split, the
 * locking would span classes.
 */
public final class MergeCoordinator implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(MergeCoordinator.class);

    /**
     * A shard's part of a round: its result, or the error that failed it.
     *
     * @param tableUnavailable the table itself could not be read or written (store down): not the shard's
     *     fault, so it does not count towards the shard's cooldown
     */
    public record Outcome(
            String shard,
            MergeTrigger trigger,
            MergeResult result,
            Throwable error,
            Duration duration,
            long finishedAtMs,
            boolean tableUnavailable) {
        public boolean failed() {
            return error != null;
        }
    }

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

    /**
     * @param upTo the highest generation the pass may take (unsigned; -1 = any)
     * @param fold a snapshot's pass: its caller takes the outcome, no task of this process drains it (the shard may
     *     be another instance's)
     */
    private record Request(
            String shard, MergeTrigger trigger, long upTo, CompletableFuture<Outcome> done, boolean fold) {}

    private final RolloutTable table;
    private final int maxGenerations;
    private final long maxBytes;
    private final long roundMaxBytes;
    private final MergeMetrics metrics;
    private final MergeFleet fleet;
    /** A coordinator made without a fleet has one of its own, closed with it. */
    private final boolean ownsFleet;

    /**
     * The planner and committer threads, started by the first request and stopped after {@link #threadsIdleStop}
     * without one, so a worker that has served many tables keeps threads only for those merging now. Guarded by
     * {@code lock}: a thread decides to stop, and a request starts one, under it.
     */
    private Thread planner;

    private Thread committer;
    private volatile Duration threadsIdleStop = Duration.ofSeconds(60);
    /**
     * A hand-off, not a buffer: the planner waits here until the committer takes its round, so the next round
     * is planned while this one commits, from every shard asked for by then (planning further ahead would cut
     * rounds into one shard each under load, each paying a full commit).
     */
    private final SynchronousQueue<PreparedRound> prepared = new SynchronousQueue<>();

    private final Set<String> inRound = ConcurrentHashMap.newKeySet();
    /** Shards a task of this process let go of: no continuation or requeue of theirs until asked again. */
    private final Set<String> released = ConcurrentHashMap.newKeySet();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition requested = lock.newCondition();
    /** Signalled whenever a shard leaves a round. */
    private final Condition roundDone = lock.newCondition();

    private final LinkedHashMap<String, List<Request>> requests = new LinkedHashMap<>();
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    private final Map<String, Queue<Outcome>> outcomes = new ConcurrentHashMap<>();
    private final int haltAfterMerges;
    private final int continueAtLeftover;
    private final AtomicInteger committedRounds = new AtomicInteger();
    private volatile RoundSummary lastRound;
    private volatile boolean closing;

    public MergeCoordinator(RolloutTable table, int maxGenerations, long maxBytes, int threads, MergeMetrics metrics) {
        this(table, maxGenerations, maxBytes, 0, threads, metrics, 0, 0);
    }

    /** A coordinator with a fleet of its own: {@code threads} preparers, its round committing while the next prepares. */
    public MergeCoordinator(
            RolloutTable table,
            int maxGenerations,
            long maxBytes,
            long roundMaxBytes,
            int threads,
            MergeMetrics metrics,
            int haltAfterMerges,
            int continueAtLeftover) {
        this(
                table,
                maxGenerations,
                maxBytes,
                roundMaxBytes,
                new MergeFleet(threads, 2),
                true,
                metrics,
                haltAfterMerges,
                continueAtLeftover);
    }

    /**
     * @param roundMaxBytes sealed bytes one round takes at most, over all its shards (0 = unbounded); a shard
     *     alone over it still merges, in a round of its own
     * @param fleet the preparers and round slots this table shares with the process's other tables
     * @param ownsFleet whether closing this coordinator closes the fleet
     * @param haltAfterMerges fault injection: halt the JVM after this many committed rounds (0 = never)
     * @param continueAtLeftover an automatic merge that leaves at least this many generations pending asks for
     *     the shard's next pass at once, in the next round (0 = never): under load a shard does not wait for
     *     its task's next check to be asked again
     */
    public MergeCoordinator(
            RolloutTable table,
            int maxGenerations,
            long maxBytes,
            long roundMaxBytes,
            MergeFleet fleet,
            boolean ownsFleet,
            MergeMetrics metrics,
            int haltAfterMerges,
            int continueAtLeftover) {
        this.continueAtLeftover = continueAtLeftover;
        this.table = table;
        this.maxGenerations = maxGenerations;
        this.maxBytes = maxBytes;
        this.roundMaxBytes = roundMaxBytes;
        this.metrics = metrics;
        this.haltAfterMerges = haltAfterMerges;
        this.fleet = fleet;
        this.ownsFleet = ownsFleet;
    }

    /** How long the threads wait without a request before they stop (a request starts them again). */
    public MergeCoordinator stopThreadsWhenIdleFor(Duration idle) {
        this.threadsIdleStop = idle;
        return this;
    }

    /** Whether the planner or committer thread is running (tests, the resident-tables bench). */
    boolean threadsRunning() {
        lock.lock();
        try {
            return planner != null || committer != null;
        } finally {
            lock.unlock();
        }
    }

    /** Starts the threads that are not running; under {@code lock}. */
    private void ensureThreads() {
        if (planner == null) {
            planner = daemon(this::runPlanner, "merge-planner");
            planner.start();
        }
        if (committer == null) {
            committer = daemon(this::runCommitter, "merge-committer");
            committer.start();
        }
    }

    private void runPlanner() {
        try {
            prepareRounds();
        } finally {
            forget(true);
        }
    }

    private void runCommitter() {
        try {
            commitRounds();
        } finally {
            forget(false);
        }
    }

    /** A thread that ends (stopped when idle, or by an error) no longer counts as running; a request starts another. */
    private void forget(boolean isPlanner) {
        lock.lock();
        try {
            if (isPlanner && planner == Thread.currentThread()) {
                planner = null;
            } else if (!isPlanner && committer == Thread.currentThread()) {
                committer = null;
            }
        } finally {
            lock.unlock();
        }
    }

    /** A daemon thread: merge work never keeps the JVM from exiting. */
    static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    public RolloutTable table() {
        return table;
    }

    public boolean running(String shard) {
        return inFlight.contains(shard);
    }

    public RoundSummary lastRound() {
        return lastRound;
    }

    /** Asks for an automatic merge of the shard in the next round; false when one is already asked for or running. */
    public boolean submit(String shard, MergeTrigger trigger) {
        if (!inFlight.add(shard)) {
            return false;
        }
        released.remove(shard);
        enqueue(new Request(shard, trigger, -1L, null, false));
        return true;
    }

    /** A manual merge: never skipped, never gated; in the next round, after the shard's current one if any. */
    public CompletableFuture<Outcome> manual(String shard) {
        return manual(shard, -1L);
    }

    /**
     * A manual merge that takes no generation above {@code upTo} (unsigned; -1 = any): how a snapshot folds a shard up
     * to its cut through the one committer of this process.
     */
    public CompletableFuture<Outcome> manual(String shard, long upTo) {
        return manual(shard, upTo, false);
    }

    private CompletableFuture<Outcome> manual(String shard, long upTo, boolean fold) {
        CompletableFuture<Outcome> done = new CompletableFuture<>();
        inFlight.add(shard);
        enqueue(new Request(shard, MergeTrigger.MANUAL, upTo, done, fold));
        return done;
    }

    /**
     * A snapshot's pass over a shard ({@link dev.rolloutingest.table.snapshots.TableSnapshots.Fold}), made by this coordinator
     * like every other merge of the process: one committer per shard, whoever asks. Throws what failed it.
     */
    public MergeResult fold(String shard, long upTo) {
        Outcome outcome;
        try {
            outcome = manual(shard, upTo, true).get(10, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RolloutTableException("interrupted while folding shard " + shard + " for a snapshot", e);
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new RolloutTableException(
                    "Table " + table.location() + " shard " + shard + " could not be folded for a snapshot: "
                            + e.getMessage(),
                    e);
        }
        if (outcome.failed()) {
            throw new RolloutTableException(
                    "Table " + table.location() + " shard " + shard + " could not be folded for a snapshot: "
                            + outcome.error().getMessage(),
                    outcome.error());
        }
        return outcome.result();
    }

    private void enqueue(Request request) {
        lock.lock();
        try {
            if (closing) {
                refuse(List.of(request), "the merge-worker is stopping");
                return;
            }
            requests.computeIfAbsent(request.shard(), s -> new ArrayList<>()).add(request);
            ensureThreads();
            requested.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lets go of shards this process no longer owns (its task was revoked or closed): their waiting requests are
     * dropped (a manual one fails: the shard moved), and a round that holds one of them is waited for, at most {@code
     * wait}, so the shard's next owner does not commit beside it. Its commits are fenced either way; this spares the
     * new owner a refused commit and the round's work.
     */
    public void release(java.util.function.Predicate<String> shards, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        lock.lock();
        try {
            var it = requests.entrySet().iterator();
            while (it.hasNext()) {
                var entry = it.next();
                if (shards.test(entry.getKey())) {
                    it.remove();
                    released.add(entry.getKey());
                    inFlight.remove(entry.getKey());
                    refuse(entry.getValue(), "shard " + entry.getKey() + " moved to another merge-worker");
                }
            }
            inRound.stream().filter(shards).forEach(released::add); // no continuation of their rounds
            while (inRound.stream().anyMatch(shards) && !(closing && (committer == null || !committer.isAlive()))) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    log.warn(
                            "Table {}: a merge round still holds shards this task let go of after {} ms; its commits"
                                    + " are fenced, the new owner's are refused or refuse it",
                            table.location(),
                            wait.toMillis());
                    return;
                }
                roundDone.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** A planned and prepared round waiting for the committer. */
    private record PreparedRound(
            long round,
            Map<String, List<Request>> batch,
            List<MergePlan> taken,
            List<PreparedMerge> prepared,
            Map<String, Throwable> unreadable,
            long startedNanos,
            long prepareNanos) {}

    /**
     * Plans and prepares rounds while the committer commits the previous one, so reading the next round's
     * generations overlaps the current commit; at most one prepared round waits (memory: two rounds).
     */
    private void prepareRounds() {
        long round = 0;
        long idleSince = System.nanoTime();
        while (!closing) {
            Map<String, List<Request>> batch = new LinkedHashMap<>();
            lock.lock();
            try {
                while (!closing && !anyReady()) {
                    if (requests.isEmpty()
                            && inRound.isEmpty()
                            && System.nanoTime() - idleSince >= threadsIdleStop.toNanos()) {
                        planner = null; // decided under the lock: the next request starts a new planner
                        return;
                    }
                    requested.await(1, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            idleSince = System.nanoTime();
            // This table's turn among the tables with work: the round is planned once granted, from every shard
            // asked for by then.
            try {
                if (!fleet.acquire(this, () -> closing)) {
                    return;
                }
            } catch (InterruptedException e) {
                return;
            }
            boolean handedOff = false;
            try {
                lock.lock();
                try {
                    if (closing) {
                        return;
                    }
                    // A shard still in the round being committed waits: its plan would read the old watermark.
                    var it = requests.entrySet().iterator();
                    while (it.hasNext()) {
                        var entry = it.next();
                        if (!inRound.contains(entry.getKey())) {
                            batch.put(entry.getKey(), entry.getValue());
                            it.remove();
                        }
                    }
                    inRound.addAll(batch.keySet());
                } finally {
                    lock.unlock();
                }
                if (batch.isEmpty()) {
                    continue; // the shards asked for were let go of while this table waited for its turn
                }
                PreparedRound next = prepareRound(++round, batch);
                while (next != null && !prepared.offer(next, 1, TimeUnit.SECONDS)) {
                    if (closing) {
                        abandon(next);
                        return;
                    }
                }
                handedOff = next != null; // the committer gives the round back once it is committed
            } catch (InterruptedException e) {
                return;
            } catch (Error e) {
                // An OutOfMemoryError or the like is not a merge failure: do not turn it into cooldowns.
                log.error("Merge planner stopped by {}", e.toString(), e);
                throw e;
            } catch (Exception e) {
                // lance-core's undeclared IOExceptions too: a round that fails as a whole is the table's problem.
                log.error("Merge round {} failed as a whole: {}", round, e.toString(), e);
                finishAll(batch, null, e, true, 0);
            } finally {
                if (!handedOff) {
                    fleet.release();
                }
            }
        }
    }

    private boolean anyReady() {
        return requests.keySet().stream().anyMatch(shard -> !inRound.contains(shard));
    }

    private void commitRounds() {
        while (!closing) {
            PreparedRound round;
            try {
                round = prepared.poll(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (round == null) {
                lock.lock();
                try {
                    if (planner == null) {
                        committer = null; // no planner to hand a round over: the next request starts both
                        return;
                    }
                } finally {
                    lock.unlock();
                }
                continue;
            }
            try {
                commitRound(round);
            } catch (Error e) {
                log.error("Merge committer stopped by {}", e.toString(), e);
                throw e;
            } catch (Exception e) {
                log.error("Merge round {} failed as a whole: {}", round.round(), e.toString(), e);
                finishAll(round.batch(), null, e, true, 0);
            } finally {
                fleet.release(); // the next table waiting gets its turn
            }
        }
    }

    private PreparedRound prepareRound(long round, Map<String, List<Request>> batch) {
        long started = System.nanoTime();
        List<MergePlan> plans;
        try {
            plans = table.planMerge(batch.keySet(), maxGenerations, maxBytes, bounds(batch));
        } catch (Exception e) {
            log.warn("Table {}: merge round {} cannot plan: {}", table.location(), round, e.getMessage());
            finishAll(batch, null, e, true, System.nanoTime() - started);
            return null;
        }
        // The round's byte budget: shards past it wait for the next round (the first always goes).
        List<MergePlan> taken = new ArrayList<>();
        long bytes = 0;
        for (MergePlan plan : plans) {
            if (!taken.isEmpty() && roundMaxBytes > 0 && bytes + plan.bytes() > roundMaxBytes) {
                lock.lock();
                try {
                    inRound.remove(plan.shard());
                    requeue(batch.get(plan.shard()));
                } finally {
                    lock.unlock();
                }
                continue;
            }
            taken.add(plan);
            bytes += plan.bytes();
        }
        Map<String, Future<PreparedMerge>> preparing = new LinkedHashMap<>();
        for (MergePlan plan : taken) {
            preparing.put(plan.shard(), fleet.preparers().submit(() -> table.prepareMerge(plan)));
        }
        List<PreparedMerge> ready = new ArrayList<>();
        Map<String, Throwable> unreadable = new LinkedHashMap<>();
        preparing.forEach((shard, future) -> {
            try {
                ready.add(future.get());
            } catch (ExecutionException e) {
                if (e.getCause() instanceof Error error) {
                    throw error;
                }
                unreadable.put(shard, e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                unreadable.put(shard, e);
            }
        });
        return new PreparedRound(round, batch, taken, ready, unreadable, started, System.nanoTime() - started);
    }

    private void commitRound(PreparedRound round) {
        Map<String, List<Request>> batch = round.batch();
        RoundResult result = table.commitMerge(round.prepared());
        long rows =
                result.merged().values().stream().mapToLong(MergeResult::rows).sum();
        boolean mergedAnything = result.merged().values().stream().anyMatch(MergeResult::mergedAnything);
        if (mergedAnything && haltAfterMerges > 0 && committedRounds.incrementAndGet() == haltAfterMerges) {
            log.warn("Fault injection: halting after committed merge round {}", haltAfterMerges);
            Runtime.getRuntime().halt(137);
        }
        long totalNanos = System.nanoTime() - round.startedNanos();
        for (MergePlan plan : round.taken()) {
            String shard = plan.shard();
            Throwable error = round.unreadable().containsKey(shard)
                    ? round.unreadable().get(shard)
                    : result.failed().get(shard);
            // The store refusing or failing requests is the table's problem, never one shard's.
            boolean unavailable = error != null
                    && !(error instanceof RolloutTableException.GenerationUnreadable)
                    && RolloutTableException.isStorageFailure(error);
            finish(batch.get(shard), result.merged().get(shard), error, unavailable, totalNanos);
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
        metrics.round(shards, result.commits(), result.duration(), Duration.ofNanos(round.prepareNanos()));
        if (mergedAnything || failed > 0) {
            log.info(
                    "Merge round {}: {} shards ({} failed), {} rows, prepared in {} ms, {} commit(s) in {} ms",
                    round.round(),
                    shards,
                    failed,
                    rows,
                    round.prepareNanos() / 1_000_000,
                    result.commits(),
                    result.duration().toMillis());
        }
    }

    /** Per shard, the lowest bound its bounded requests set (a snapshot's cut); shards without one are unbounded. */
    private static Map<String, Long> bounds(Map<String, List<Request>> batch) {
        Map<String, Long> bounds = new LinkedHashMap<>();
        batch.forEach((shard, waiting) -> waiting.stream()
                .mapToLong(Request::upTo)
                .filter(upTo -> upTo != -1L)
                .reduce((a, b) -> Long.compareUnsigned(a, b) <= 0 ? a : b)
                .ifPresent(upTo -> bounds.put(shard, upTo)));
        return bounds;
    }

    /** Fails the callers waiting on requests that will not run (the automatic ones have no caller). */
    private static void refuse(List<Request> waiting, String why) {
        waiting.stream()
                .map(Request::done)
                .filter(d -> d != null)
                .forEach(d -> d.completeExceptionally(new IllegalStateException(why)));
    }

    /** A prepared round that will not be committed (the worker is stopping): its shards are let go at once. */
    private void abandon(PreparedRound round) {
        round.prepared().forEach(PreparedMerge::close);
        finishAll(round.batch(), null, new IllegalStateException("the merge-worker is stopping"), true, 0);
    }

    private void requeue(List<Request> waiting) {
        lock.lock();
        try {
            for (Request request : waiting) {
                if (released.contains(request.shard()) && request.done() == null) {
                    inFlight.remove(request.shard());
                    continue;
                }
                requests.computeIfAbsent(request.shard(), s -> new ArrayList<>())
                        .add(request);
            }
            requested.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void finishAll(
            Map<String, List<Request>> batch, MergeResult result, Throwable error, boolean unavailable, long nanos) {
        batch.values().forEach(requests -> finish(requests, result, error, unavailable, nanos));
    }

    private void finish(
            List<Request> shardRequests, MergeResult result, Throwable error, boolean unavailable, long nanos) {
        Request first = shardRequests.get(0);
        MergeTrigger trigger = shardRequests.stream()
                .map(Request::trigger)
                .filter(t -> t == MergeTrigger.MANUAL)
                .findFirst()
                .orElse(first.trigger());
        Outcome outcome = new Outcome(
                first.shard(),
                trigger,
                error == null ? result : null,
                error,
                Duration.ofNanos(nanos),
                System.currentTimeMillis(),
                unavailable);
        if (error == null) {
            metrics.pass(name(trigger), result.mergedAnything() ? "success" : "empty", outcome.duration());
            metrics.merged(result.mergedGenerations().size());
        } else {
            metrics.pass(name(trigger), "failure", outcome.duration());
            log.warn(
                    "Table {} shard {}: {} merge failed{}: {}",
                    table.location(),
                    first.shard(),
                    name(trigger),
                    unavailable ? " (table unavailable)" : "",
                    error.getMessage());
        }
        boolean more = error == null
                && continueAtLeftover > 0
                && trigger != MergeTrigger.MANUAL
                && result.mergedAnything()
                && result.leftover() >= continueAtLeftover
                && !closing;
        if (shardRequests.stream().anyMatch(r -> !r.fold())) {
            outcomes.computeIfAbsent(first.shard(), s -> new ConcurrentLinkedQueue<>())
                    .add(outcome);
        }
        lock.lock();
        try {
            inRound.remove(first.shard());
            if (more && !released.contains(first.shard())) {
                // Still in flight: the shard's task sees it running and leaves the asking to us.
                requests.computeIfAbsent(first.shard(), s -> new ArrayList<>())
                        .add(new Request(first.shard(), first.trigger(), -1L, null, false));
            } else {
                inFlight.remove(first.shard());
            }
            requested.signalAll(); // a request waiting for this shard's round can be planned now
            roundDone.signalAll();
        } finally {
            lock.unlock();
        }
        shardRequests.stream().map(Request::done).filter(d -> d != null).forEach(d -> d.complete(outcome));
    }

    /** Finished merges of a shard, oldest first, removed from the queue. */
    public List<Outcome> drain(String shard) {
        Queue<Outcome> queue = outcomes.get(shard);
        List<Outcome> drained = new ArrayList<>();
        if (queue != null) {
            for (Outcome o; (o = queue.poll()) != null; ) {
                drained.add(o);
            }
        }
        return drained;
    }

    static String name(MergeTrigger trigger) {
        return trigger.name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void close() {
        lock.lock();
        try {
            closing = true;
            requested.signalAll();
            requests.values().forEach(waiting -> refuse(waiting, "the merge-worker is stopping"));
            requests.clear();
        } finally {
            lock.unlock();
        }
        try {
            // A round in flight commits or not as a whole; waiting lets it finish cleanly.
            Thread plannerThread;
            Thread committerThread;
            lock.lock();
            try {
                plannerThread = planner;
                committerThread = committer;
            } finally {
                lock.unlock();
            }
            if (plannerThread != null) {
                plannerThread.join(TimeUnit.SECONDS.toMillis(60));
            }
            if (committerThread != null) {
                committerThread.join(TimeUnit.SECONDS.toMillis(60));
            }
            PreparedRound abandoned;
            while ((abandoned = prepared.poll()) != null) {
                abandon(abandoned);
                fleet.release();
            }
            if (ownsFleet) {
                fleet.close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
