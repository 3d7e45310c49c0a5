package dev.rolloutingest.testsupport;

import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Waiting in tests for what the apps do on their own time: a bound, and what was waited for if it ran out. */
public final class Await {
    private Await() {}

    /** Until the condition holds; fails naming {@code what} after {@code seconds}. */
    public static void until(int seconds, String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + seconds + " s: " + what);
            }
            pause(200);
        }
    }

    /** Until the condition holds; fails naming {@code what} and what {@code state} tells then after {@code seconds}. */
    public static void until(int seconds, String what, BooleanSupplier condition, Supplier<String> state) {
        try {
            until(seconds, what, condition);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; " + state.get(), e);
        }
    }

    /** Until the value equals {@code expected}; returns the last value read (the caller asserts on it). */
    public static <T> T value(int seconds, T expected, Supplier<T> value) {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        T last = value.get();
        while (!expected.equals(last) && System.nanoTime() < deadline) {
            pause(250);
            last = value.get();
        }
        return last;
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting", e);
        }
    }
}
