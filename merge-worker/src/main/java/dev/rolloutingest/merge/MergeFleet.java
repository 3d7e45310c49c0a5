package dev.rolloutingest.merge;

import java.util.ArrayDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * The merge capacity of one process, shared by every table's {@link MergeCoordinator}: one pool of preparers
 * ({@code rollout.merge.threads}) and at most {@code rollout.merge.tables.parallel} rounds in flight (being prepared or
 * committed) over all tables. Commits to different tables do not conflict, so they run side by side up to that bound.
 * Rounds are granted first come, first served: a table that just finished a round and asks again queues behind the
 * tables already waiting, so a hot table gets one turn per round of the others, never more than its share.
 */
public final class MergeFleet implements AutoCloseable {
    private final ExecutorService preparers;
    private final int rounds;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** The tables waiting for a round, in the order they asked. */
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();

    private int inFlight;
    private int mostInFlight;

    /**
     * @param threads preparers shared by all tables
     * @param rounds rounds in flight at once over all tables
     */
    public MergeFleet(int threads, int rounds) {
        if (threads < 1 || rounds < 1) {
            throw new IllegalArgumentException("threads and rounds must be at least 1: " + threads + ", " + rounds);
        }
        AtomicInteger n = new AtomicInteger();
        this.preparers = Executors.newFixedThreadPool(
                threads, r -> MergeCoordinator.daemon(r, "merge-prepare-" + n.incrementAndGet()));
        this.rounds = rounds;
    }

    ExecutorService preparers() {
        return preparers;
    }

    /**
     * Waits for a round, in turn: true once granted (the caller must {@link #release} it), false when {@code stop}
     * said so first. {@code table} is the asking table's coordinator; it holds its place in the queue while it waits.
     */
    boolean acquire(Object table, BooleanSupplier stop) throws InterruptedException {
        lock.lock();
        try {
            waiting.addLast(table);
            try {
                while (waiting.peekFirst() != table || inFlight >= rounds) {
                    if (stop.getAsBoolean()) {
                        return false;
                    }
                    changed.await(200, TimeUnit.MILLISECONDS);
                }
                inFlight++;
                mostInFlight = Math.max(mostInFlight, inFlight);
                return true;
            } finally {
                waiting.removeFirstOccurrence(table);
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** A granted round is over (committed, failed or abandoned). */
    void release() {
        lock.lock();
        try {
            inFlight--;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The most rounds ever in flight at once, for /pending and the tests of the bound. */
    public int mostInFlight() {
        lock.lock();
        try {
            return mostInFlight;
        } finally {
            lock.unlock();
        }
    }

    /** The tables waiting for their turn now. */
    int waiting() {
        lock.lock();
        try {
            return waiting.size();
        } finally {
            lock.unlock();
        }
    }

    int rounds() {
        return rounds;
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
