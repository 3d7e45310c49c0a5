package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The merge capacity shared by many tables: a bound on rounds in flight, granted in turn, over real local tables. */
class MergeFleetTest {
    private static final String TOPIC = "rollouts";
    private static final String SHARD = ShardId.of(TOPIC, 0);
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final MergeMetrics metrics = new MergeMetrics(meters);
    private final Path dir =
            Path.of("target", "fleet", UUID.randomUUID().toString()).toAbsolutePath();

    private RolloutTable table(String name) {
        return RolloutTable.createOrOpen(TableLocation.local(dir.resolve(name)), TableSettings.DEFAULTS, meters);
    }

    private static void generations(RolloutTable table, int count) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, 0);
        for (int g = 0; g < count; g++) {
            List<RolloutRow> rows = new ArrayList<>();
            for (long offset = g * 10L; offset < g * 10L + 10; offset++) {
                Rollout rollout = generator.rollout(offset, 0);
                rows.add(new RolloutRow(rollout, 0, offset, Instant.now()));
            }
            table.writeGeneration(TOPIC, 0, g * 10L, g * 10L + 9, rows, 1000);
        }
    }

    @Test
    void aTableThatJustHadItsTurnQueuesBehindTheTablesAlreadyWaiting() throws Exception {
        try (MergeFleet fleet = new MergeFleet(1, 1)) {
            Object hot = "hot";
            Object cold = "cold";
            assertThat(fleet.acquire(hot, () -> false)).isTrue();
            CompletableFuture<Boolean> coldTurn = CompletableFuture.supplyAsync(() -> acquire(fleet, cold));
            awaitWaiting(fleet, 1);
            CompletableFuture<Boolean> hotAgain = CompletableFuture.supplyAsync(() -> acquire(fleet, hot));
            awaitWaiting(fleet, 2);
            fleet.release();
            assertThat(coldTurn.get(30, TimeUnit.SECONDS)).isTrue();
            Thread.sleep(300);
            assertThat(hotAgain)
                    .as("the hot table waits for the cold one's round")
                    .isNotDone();
            fleet.release();
            assertThat(hotAgain.get(30, TimeUnit.SECONDS)).isTrue();
            fleet.release();
            assertThat(fleet.mostInFlight()).isEqualTo(1);
        }
    }

    private static boolean acquire(MergeFleet fleet, Object table) {
        try {
            return fleet.acquire(table, () -> false);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitWaiting(MergeFleet fleet, int tables) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (fleet.waiting() < tables && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(fleet.waiting()).isEqualTo(tables);
    }

    @Test
    void commitsOfManyTablesRunSideBySideNeverMoreThanTheBound() throws Exception {
        int tableCount = 6;
        AtomicInteger committing = new AtomicInteger();
        AtomicInteger mostCommitting = new AtomicInteger();
        List<RolloutTable> tables = new ArrayList<>();
        List<MergeCoordinator> coordinators = new ArrayList<>();
        try (MergeFleet fleet = new MergeFleet(2, 2)) {
            for (int t = 0; t < tableCount; t++) {
                RolloutTable table = table("t" + t);
                tables.add(table);
                generations(table, 3);
                table.injectMergeCommitFault(stage -> {
                    if (stage == CommitStage.CHECKED) {
                        mostCommitting.accumulateAndGet(committing.incrementAndGet(), Math::max);
                        sleep(300); // a commit long enough for the others to start beside it if they may
                    } else if (stage == CommitStage.MARKED) {
                        committing.decrementAndGet();
                    }
                });
                coordinators.add(new MergeCoordinator(table, 8, 1L << 20, 0, fleet, false, metrics, 0, 0));
            }
            List<CompletableFuture<MergeCoordinator.Outcome>> merges = new ArrayList<>();
            coordinators.forEach(c -> merges.add(c.manual(SHARD)));
            for (CompletableFuture<MergeCoordinator.Outcome> merge : merges) {
                MergeCoordinator.Outcome outcome = merge.get(120, TimeUnit.SECONDS);
                assertThat(outcome.failed()).isFalse();
                assertThat(outcome.result().mergedGenerations()).hasSize(3);
            }
            assertThat(mostCommitting.get())
                    .as("commits of different tables overlap, up to the bound")
                    .isEqualTo(2);
        } finally {
            coordinators.forEach(MergeCoordinator::close);
            tables.forEach(RolloutTable::close);
        }
    }

    @Test
    void aHotTableServedRoundAfterRoundDoesNotStarveAColdOne() throws Exception {
        List<RolloutTable> tables = new ArrayList<>();
        List<MergeCoordinator> hot = new ArrayList<>();
        MergeCoordinator cold = null;
        try (MergeFleet fleet = new MergeFleet(2, 1)) {
            for (String name : List.of("hot-0", "hot-1")) {
                RolloutTable table = table(name);
                tables.add(table);
                generations(table, 30);
                // One generation per round, and the next round asked for at once: always a round waiting.
                hot.add(new MergeCoordinator(table, 1, 1L << 20, 0, fleet, false, metrics, 0, 1));
            }
            RolloutTable coldTable = table("cold");
            tables.add(coldTable);
            generations(coldTable, 1);
            cold = new MergeCoordinator(coldTable, 8, 1L << 20, 0, fleet, false, metrics, 0, 0);
            hot.forEach(c -> c.submit(SHARD, MergeTrigger.COUNT));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (hotRounds(hot) < 4 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            long before = hotRounds(hot);
            MergeCoordinator.Outcome outcome = cold.manual(SHARD).get(120, TimeUnit.SECONDS);
            long during = hotRounds(hot) - before;
            assertThat(outcome.failed()).isFalse();
            assertThat(during)
                    .as("the cold table's round came after at most one round of each hot table (and the one"
                            + " being committed)")
                    .isLessThanOrEqualTo(4);
            assertThat(tables.get(0).pendingGenerations(SHARD))
                    .as("the hot table was still being served")
                    .isNotEmpty();
        } finally {
            hot.forEach(MergeCoordinator::close);
            if (cold != null) {
                cold.close();
            }
            tables.forEach(RolloutTable::close);
        }
    }

    private static long hotRounds(List<MergeCoordinator> hot) {
        return hot.stream()
                .map(MergeCoordinator::lastRound)
                .mapToLong(r -> r == null ? 0 : r.round())
                .sum();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
