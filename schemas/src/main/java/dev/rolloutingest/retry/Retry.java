package dev.rolloutingest.retry;

import java.time.Duration;
import java.util.function.Predicate;

/**
 * The one retry loop: bounded attempts, exponential backoff, and the caller saying what is worth another
 * attempt. It lives in the lowest module because every module has a loop to run through it (the registry
 * client, the table, the ingest writer).
 */
public final class Retry {
    /** At most {@code attempts} attempts; the first wait is {@code firstBackoff}, doubling up to {@code maxBackoff}. */
    public record Policy(int attempts, Duration firstBackoff, Duration maxBackoff) {
        public Policy {
            if (attempts < 1) {
                throw new IllegalArgumentException("attempts must be >= 1, was " + attempts);
            }
        }
    }

    /** One attempt; {@code attempt} counts from 1. */
    @FunctionalInterface
    public interface Attempt<T> {
        T run(int attempt) throws Exception;
    }

    /** Told before each wait: the failed attempt, its failure and how long the loop now waits. */
    @FunctionalInterface
    public interface Listener {
        void retrying(int attempt, Exception failure, Duration backoff);

        Listener NONE = (attempt, failure, backoff) -> {};
    }

    /** The last failure, once every attempt failed or a failure was not retryable. */
    public static final class Exhausted extends Exception {
        private final int attempts;

        Exhausted(int attempts, Exception last) {
            super(last.getMessage(), last);
            this.attempts = attempts;
        }

        /** Attempts made. */
        public int attempts() {
            return attempts;
        }

        /** The last attempt's failure. */
        public Exception last() {
            return (Exception) getCause();
        }
    }

    private Retry() {}

    /**
     * Runs {@code attempt} until it succeeds. A failure {@code retryable} refuses, or the last attempt's, ends
     * the loop as {@link Exhausted}; an interrupt during a wait ends it as {@link InterruptedException} (the
     * thread's flag set again). Errors are never caught.
     */
    public static <T> T run(Policy policy, Predicate<Exception> retryable, Listener listener, Attempt<T> attempt)
            throws Exhausted, InterruptedException {
        long backoffNanos = policy.firstBackoff().toNanos();
        for (int n = 1; ; n++) {
            try {
                return attempt.run(n);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw e;
            } catch (Exception e) {
                if (n >= policy.attempts() || !retryable.test(e)) {
                    throw new Exhausted(n, e);
                }
                Duration backoff = Duration.ofNanos(backoffNanos);
                listener.retrying(n, e, backoff);
                try {
                    Thread.sleep(backoff.toMillis());
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw interrupted;
                }
                backoffNanos = Math.min(backoffNanos * 2, policy.maxBackoff().toNanos());
            }
        }
    }
}
