package dev.rolloutingest.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The one retry loop: bounded attempts, doubling backoff with a cap, the caller's retryable, Errors untouched. */
class RetryTest {
    private static final Retry.Policy POLICY = new Retry.Policy(4, Duration.ofMillis(1), Duration.ofMillis(3));

    @Test
    void retriesUntilSuccessWaitingLongerEachTimeUpToTheCap() throws Exception {
        List<Long> waits = new ArrayList<>();
        String result =
                Retry.run(POLICY, e -> true, (attempt, e, backoff) -> waits.add(backoff.toMillis()), attempt -> {
                    if (attempt < 4) {
                        throw new IllegalStateException("attempt " + attempt);
                    }
                    return "done at " + attempt;
                });
        assertThat(result).isEqualTo("done at 4");
        assertThat(waits).containsExactly(1L, 2L, 3L);
    }

    @Test
    void stopsAfterTheLastAttemptWithItsFailure() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> Retry.run(POLICY, e -> true, Retry.Listener.NONE, attempt -> {
                    calls.incrementAndGet();
                    throw new IllegalStateException("attempt " + attempt);
                }))
                .isInstanceOf(Retry.Exhausted.class)
                .hasMessage("attempt 4")
                .satisfies(e -> assertThat(((Retry.Exhausted) e).attempts()).isEqualTo(4));
        assertThat(calls).hasValue(4);
    }

    @Test
    void aFailureTheCallerDoesNotRetryEndsTheLoopAtOnce() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> Retry.run(
                        POLICY, e -> !(e instanceof IllegalArgumentException), Retry.Listener.NONE, attempt -> {
                            calls.incrementAndGet();
                            throw new IllegalArgumentException("bad input");
                        }))
                .isInstanceOf(Retry.Exhausted.class)
                .satisfies(e -> assertThat(((Retry.Exhausted) e).last()).isInstanceOf(IllegalArgumentException.class));
        assertThat(calls).hasValue(1);
    }

    @Test
    void anErrorIsNeverCaught() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> Retry.run(POLICY, e -> true, Retry.Listener.NONE, attempt -> {
                    calls.incrementAndGet();
                    throw new OutOfMemoryError("simulated");
                }))
                .isInstanceOf(OutOfMemoryError.class);
        assertThat(calls).hasValue(1);
    }

    @Test
    void anInterruptDuringTheWaitEndsTheLoopWithTheFlagSet() {
        Retry.Policy slow = new Retry.Policy(3, Duration.ofSeconds(30), Duration.ofSeconds(30));
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> Retry.run(slow, e -> true, Retry.Listener.NONE, attempt -> {
                    throw new IllegalStateException("down");
                }))
                .isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isTrue();
    }

    @Test
    void aPolicyWithoutAttemptsIsRefused() {
        assertThatThrownBy(() -> new Retry.Policy(0, Duration.ZERO, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("attempts");
    }
}
