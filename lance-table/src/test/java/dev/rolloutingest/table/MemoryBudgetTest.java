package dev.rolloutingest.table;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class MemoryBudgetTest {
    @Test
    void whatFitsIsAdmittedAndWhatDoesNotIsRefusedWithNothingCounted() {
        MemoryBudget budget = MemoryBudget.bounded("columns", 100);
        assertThat(budget.tryAdmit(60)).isTrue();
        assertThat(budget.tryAdmit(41)).as("one byte past the limit").isFalse();
        assertThat(budget.used()).as("a refusal counts nothing").isEqualTo(60);
        assertThat(budget.room()).isEqualTo(40);
        assertThat(budget.tryAdmit(40)).as("up to the limit, inclusive").isTrue();
        assertThat(budget.used()).isEqualTo(100);
        assertThat(budget.room()).isZero();
        assertThat(budget.over()).isFalse();
        assertThat(budget.tryAdmit(0)).isTrue();
    }

    @Test
    void memoryAlreadyHeldIsCountedPastTheLimitAndNothingIsAdmittedUntilItIsReleased() {
        MemoryBudget budget = MemoryBudget.bounded("in-flight", 100);
        budget.count(150);
        assertThat(budget.used()).isEqualTo(150);
        assertThat(budget.over()).isTrue();
        assertThat(budget.room()).isZero();
        assertThat(budget.tryAdmit(1)).isFalse();
        budget.release(60);
        assertThat(budget.used()).isEqualTo(90);
        assertThat(budget.over()).isFalse();
        assertThat(budget.tryAdmit(10)).isTrue();
        assertThat(budget.tryAdmit(1)).isFalse();
    }

    @Test
    void releasingMoreThanIsCountedOrNegativeBytesIsRefusedAndChangesNothing() {
        MemoryBudget budget = MemoryBudget.bounded("keys", 100);
        budget.count(30);
        assertThatThrownBy(() -> budget.release(31))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("keys");
        assertThatThrownBy(() -> budget.count(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> budget.tryAdmit(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> budget.release(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(budget.used()).isEqualTo(30);
        budget.release(30);
        assertThat(budget.used()).isZero();
    }

    @Test
    void zeroIsNoLimitWhereTheSettingSaysSoAndAdmitsNothingWhereItDoesNot() {
        MemoryBudget off = MemoryBudget.boundedUnlessZero("in-flight", 0);
        assertThat(off.isBounded()).isFalse();
        assertThat(off.limit()).isZero();
        assertThat(off.tryAdmit(Long.MAX_VALUE / 2)).isTrue();
        off.count(Long.MAX_VALUE / 4);
        assertThat(off.over()).isFalse();
        assertThat(off.room()).isEqualTo(Long.MAX_VALUE);

        MemoryBudget none = MemoryBudget.bounded("columns", 0);
        assertThat(none.isBounded()).isTrue();
        assertThat(none.tryAdmit(1)).isFalse();
        assertThat(none.room()).isZero();

        MemoryBudget set = MemoryBudget.boundedUnlessZero("in-flight", 10);
        assertThat(set.isBounded()).isTrue();
        assertThat(set.tryAdmit(11)).isFalse();
    }

    @Test
    void threadsAdmittingAndReleasingTogetherNeverTakeItPastTheLimitAndLeaveNothingCounted() throws Exception {
        MemoryBudget budget = MemoryBudget.bounded("shared", 1_000);
        AtomicLong highest = new AtomicLong();
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                done.add(threads.submit(() -> {
                    for (int i = 0; i < 20_000; i++) {
                        long bytes = 1 + i % 300;
                        if (budget.tryAdmit(bytes)) {
                            highest.accumulateAndGet(budget.used(), Math::max);
                            budget.release(bytes);
                        }
                    }
                }));
            }
            for (Future<?> thread : done) {
                thread.get(60, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        assertThat(highest.get()).isPositive().isLessThanOrEqualTo(1_000);
        assertThat(budget.used()).isZero();
    }
}
