package dev.rolloutingest.table.merge;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The merge capacity of one process, shared by the tables it merges: one bounded pool that prepares rounds (reads and
 * de-duplicates their shards), and at most {@code rounds} rounds in flight (being prepared or committed) over all
 * tables. Commits to different tables do not conflict, so they run side by side up to that bound. Rounds are granted
 * first come, first served: a table that just finished a round and asks again queues behind the tables already
 * waiting, so a hot or broken table gets one turn per turn of each waiting table, never more than its share.
 *
 * <p>Admission is a future, not a blocked thread: a table waiting for its turn holds no thread.
 */
public final class MergeCapacity implements AutoCloseable {
    private final ThreadPoolExecutor preparers;
    private final int rounds;
    private final Duration idleStop;
    /** The tables' requests for a round, in the order they asked; guarded by {@code this}. */
    private final ArrayDeque<CompletableFuture<Void>> waiting = new ArrayDeque<>();

    private int inFlight;
    private int mostInFlight;

    /**
     * @param preparers threads that prepare rounds, shared by all tables
     * @param rounds rounds in flight at once over all tables
     * @param idleStop how long a merge thread waits without work before it stops (a request starts it again)
     */
    public MergeCapacity(int preparers, int rounds, Duration idleStop) {
        if (preparers < 1 || rounds < 1) {
            throw new IllegalArgumentException("preparers and rounds must be at least 1: " + preparers + ", " + rounds);
        }
        this.preparers = idleStopping(preparers, idleStop, "merge-prepare");
        this.rounds = rounds;
        this.idleStop = idleStop;
    }

    /**
     * A pool of at most {@code threads} daemon threads (merge work never keeps the JVM from exiting) that start on
     * demand and stop after {@code keepAlive} without work.
     */
    static ThreadPoolExecutor idleStopping(int threads, Duration keepAlive, String name) {
        AtomicInteger n = new AtomicInteger();
        ThreadFactory daemons = r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
        ThreadPoolExecutor pool = new ThreadPoolExecutor(
                threads, threads, keepAlive.toMillis(), TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), daemons);
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** How long a table's committer thread waits without a round before it stops. */
    Duration idleStop() {
        return idleStop;
    }

    Executor preparers() {
        return preparers;
    }

    /** A round for the asking table, in turn: completes once granted; the table then {@link #release}s it once. */
    synchronized CompletableFuture<Void> admit() {
        if (waiting.isEmpty() && inFlight < rounds) {
            grant();
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> turn = new CompletableFuture<>();
        waiting.addLast(turn);
        return turn;
    }

    /** A granted round is over (committed, failed or abandoned): the next table waiting gets it. */
    void release() {
        CompletableFuture<Void> next;
        synchronized (this) {
            inFlight--;
            next = waiting.pollFirst();
            if (next != null) {
                grant();
            }
        }
        if (next != null) {
            next.complete(null); // outside the monitor: its round goes on from here (on the preparers)
        }
    }

    private void grant() {
        inFlight++;
        mostInFlight = Math.max(mostInFlight, inFlight);
    }

    /** The most rounds ever in flight at once, for /pending and the tests of the bound. */
    public synchronized int mostInFlight() {
        return mostInFlight;
    }

    /** The tables waiting for their turn now. */
    public synchronized int waiting() {
        return waiting.size();
    }

    public int rounds() {
        return rounds;
    }

    /** Preparer threads running now (they stop when idle). */
    public int preparerThreads() {
        return preparers.getPoolSize();
    }

    @Override
    public void close() {
        preparers.shutdown();
        try {
            preparers.awaitTermination(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
