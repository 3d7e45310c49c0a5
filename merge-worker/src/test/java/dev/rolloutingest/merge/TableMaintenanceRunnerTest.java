package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** Upkeep of many tables: a failing table fails alone, a hung one is counted as failed in time and holds one thread. */
class TableMaintenanceRunnerTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    @Test
    void aFailingTableFailsAloneAndAHungOneIsCountedFailedAfterItsTimeWhileTheOthersAreServed() throws Exception {
        CountDownLatch hangs = new CountDownLatch(1);
        List<TableMaintenanceRunner.Outcome> outcomes = new ArrayList<>();
        try (TableMaintenanceRunner runner =
                new TableMaintenanceRunner(new MergeMetrics(meters), 2, Duration.ofMillis(500))) {
            assertThat(runner.submit("hung", "/tables/hung", "compact", () -> {
                        await(hangs);
                        return "late";
                    }))
                    .isTrue();
            assertThat(runner.submit("broken", "/tables/broken", "compact", () -> {
                        throw new IllegalStateException("Not found: /tables/broken/data/1.lance");
                    }))
                    .isTrue();
            for (int t = 0; t < 5; t++) {
                assertThat(runner.submit("t" + t, "/tables/t" + t, "compact", () -> "ok"))
                        .isTrue();
            }
            assertThat(runner.submit("hung", "/tables/hung", "compact", () -> "twice"))
                    .as("a kind still running on a table is not started twice")
                    .isFalse();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (outcomes.size() < 7 && System.nanoTime() < deadline) {
                outcomes.addAll(runner.drain(o -> true));
                Thread.sleep(50);
            }
            assertThat(outcomes).hasSize(7);
            assertThat(outcomes.stream().filter(o -> o.table().startsWith("t")))
                    .hasSize(5)
                    .allSatisfy(o -> assertThat(o.error()).isNull());
            assertThat(outcomes.stream().filter(o -> o.table().equals("broken")))
                    .singleElement()
                    .satisfies(o -> assertThat(o.error()).hasMessageContaining("Not found"));
            assertThat(outcomes.stream().filter(o -> o.table().equals("hung")))
                    .singleElement()
                    .satisfies(o -> assertThat(o.error())
                            .isInstanceOf(TimeoutException.class)
                            .hasMessageContaining("500 ms"));
            hangs.countDown();
            Thread.sleep(300);
            assertThat(runner.drain(o -> true))
                    .as("the hung job's late end is not reported a second time")
                    .isEmpty();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
