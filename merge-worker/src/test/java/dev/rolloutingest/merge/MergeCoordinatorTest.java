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
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The coordinator keeps a shard with a backlog merging without waiting to be asked again. */
class MergeCoordinatorTest {
    private static final String TOPIC = "rollouts";
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "coordinator", UUID.randomUUID().toString()).toAbsolutePath();

    private static void generations(RolloutTable table, int count) {
        generations(table, 0, count);
    }

    /** Generations {@code first .. first + count - 1} of 10 offsets each. */
    private static void generations(RolloutTable table, int first, int count) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, 0);
        for (int g = first; g < first + count; g++) {
            List<RolloutRow> rows = new ArrayList<>();
            for (long offset = g * 10L; offset < g * 10L + 10; offset++) {
                Rollout rollout = generator.rollout(offset, 0);
                rows.add(new RolloutRow(rollout, 0, offset, Instant.now()));
            }
            table.writeGeneration(TOPIC, 0, g * 10L, g * 10L + 9, rows, 1000);
        }
    }

    @Test
    void aShardLeavingAFullPassBehindIsMergedAgainAtOnceUntilItsBacklogIsUnderTheTrigger() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters);
                MergeCoordinator coordinator =
                        new MergeCoordinator(table, 8, 1L << 20, 1L << 20, 2, new MergeMetrics(meters), 0, 8)) {
            generations(table, 28); // 3 full passes of 8, then 4 left: under the trigger of 8
            assertThat(coordinator.submit(shard, MergeTrigger.COUNT)).isTrue();
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (coordinator.running(shard) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(coordinator.running(shard)).isFalse();
            List<MergeCoordinator.Outcome> outcomes = coordinator.drain(shard);
            assertThat(outcomes).hasSize(3).allSatisfy(o -> {
                assertThat(o.failed()).isFalse();
                assertThat(o.trigger()).isEqualTo(MergeTrigger.COUNT);
                assertThat(o.result().mergedGenerations()).hasSize(8);
            });
            assertThat(table.watermarks().get(shard)).isEqualTo(240L);
            assertThat(table.pendingGenerations(shard)).hasSize(4);
        }
    }

    @Test
    void aSnapshotFoldsThroughTheCoordinatorSoEveryCommitIsItsCommittersAndNoneTakesAGenerationAboveTheCut()
            throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters);
                MergeCoordinator coordinator =
                        new MergeCoordinator(table, 2, 1L << 20, 1L << 20, 2, new MergeMetrics(meters), 0, 0)) {
            generations(table, 6); // generations 10, 20, ..., 60
            java.util.Set<String> committers = java.util.concurrent.ConcurrentHashMap.newKeySet();
            table.injectMergeCommitFault(
                    stage -> committers.add(Thread.currentThread().getName()));

            TableSnapshots.Snapshot snapshot = table.snapshots()
                    .create("cut", new TableSnapshots.Cut(TOPIC, java.util.Map.of(0, 45L)), coordinator::fold);

            assertThat(committers).containsExactly("merge-committer");
            assertThat(snapshot.offsets()).containsEntry(TOPIC + ":0", 40L); // a cut inside a generation ends before it
            assertThat(table.watermarks().get(shard)).isEqualTo(40L);
            assertThat(table.pendingGenerations(shard)).hasSize(2);
        }
    }

    @Test
    void aTaskLettingGoOfItsShardsDropsTheirRequestsAndWaitsForTheirRoundToCommit() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters);
                MergeCoordinator coordinator =
                        new MergeCoordinator(table, 8, 1L << 20, 1L << 20, 2, new MergeMetrics(meters), 0, 0)) {
            generations(table, 3);
            java.util.concurrent.CountDownLatch inCommit = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
            table.injectMergeCommitFault(stage -> {
                if (stage == CommitStage.CHECKED) {
                    inCommit.countDown();
                    try {
                        letGo.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            assertThat(coordinator.submit(shard, MergeTrigger.COUNT)).isTrue();
            assertThat(inCommit.await(60, java.util.concurrent.TimeUnit.SECONDS))
                    .isTrue();
            java.util.concurrent.CompletableFuture<MergeCoordinator.Outcome> queued = coordinator.manual(shard);

            java.util.concurrent.CompletableFuture<Void> released = java.util.concurrent.CompletableFuture.runAsync(
                    () -> coordinator.release(shard::equals, java.time.Duration.ofSeconds(60)));
            Thread.sleep(500);
            assertThat(released).as("waits for the round that holds the shard").isNotDone();
            assertThat(queued).as("the waiting request is dropped").isCompletedExceptionally();

            letGo.countDown();
            released.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(table.watermarks().get(shard))
                    .as("the round committed before the release returned")
                    .isEqualTo(30L);
        }
    }

    @Test
    void aRoundAbandonedWhenTheWorkerStopsLetsItsShardsGoAtOnce() throws Exception {
        String first = ShardId.of(TOPIC, 0);
        String second = ShardId.of(TOPIC, 1);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters)) {
            generations(table, 2);
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 1);
            List<RolloutRow> rows = new ArrayList<>();
            for (long offset = 0; offset < 10; offset++) {
                rows.add(new RolloutRow(generator.rollout(offset + 100, 0), 1, offset, Instant.now()));
            }
            table.writeGeneration(TOPIC, 1, 0, 9, rows, 1000);
            java.util.concurrent.CountDownLatch inCommit = new java.util.concurrent.CountDownLatch(1);
            java.util.concurrent.CountDownLatch letGo = new java.util.concurrent.CountDownLatch(1);
            table.injectMergeCommitFault(stage -> {
                if (stage == CommitStage.CHECKED && inCommit.getCount() > 0) {
                    inCommit.countDown();
                    try {
                        letGo.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            MergeCoordinator coordinator =
                    new MergeCoordinator(table, 8, 1L << 20, 1L << 20, 2, new MergeMetrics(meters), 0, 0);
            try {
                assertThat(coordinator.submit(first, MergeTrigger.COUNT)).isTrue();
                assertThat(inCommit.await(60, java.util.concurrent.TimeUnit.SECONDS))
                        .isTrue();
                // the next round is prepared and waits for the committer, which is held in the first
                assertThat(coordinator.submit(second, MergeTrigger.COUNT)).isTrue();
                Thread.sleep(1_000);
                java.util.concurrent.CompletableFuture<Void> closed =
                        java.util.concurrent.CompletableFuture.runAsync(coordinator::close);
                Thread.sleep(1_500); // the planner sees the worker stopping and abandons the waiting round

                long started = System.nanoTime();
                coordinator.release(second::equals, java.time.Duration.ofSeconds(60));
                assertThat((System.nanoTime() - started) / 1_000_000)
                        .as("the abandoned round's shard is let go at once, not after the wait")
                        .isLessThan(10_000);
                assertThat(coordinator.running(second)).isFalse();

                letGo.countDown();
                closed.get(60, java.util.concurrent.TimeUnit.SECONDS);
            } finally {
                letGo.countDown();
                coordinator.close();
            }
            assertThat(table.watermarks().get(first))
                    .as("the round in the commit finished")
                    .isEqualTo(20L);
            assertThat(table.watermarks()).doesNotContainKey(second);
        }
    }

    @Test
    void itsThreadsStopWhenIdleAndStartAgainWithTheNextRequest() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters);
                MergeCoordinator coordinator = new MergeCoordinator(
                                table, 8, 1L << 20, 1L << 20, 2, new MergeMetrics(meters), 0, 0)
                        .stopThreadsWhenIdleFor(Duration.ofMillis(300))) {
            assertThat(coordinator.threadsRunning())
                    .as("no thread before the first request")
                    .isFalse();
            for (int pass = 0; pass < 2; pass++) {
                generations(table, 4 * pass, 4);
                assertThat(coordinator.submit(shard, MergeTrigger.COUNT)).isTrue();
                assertThat(coordinator.threadsRunning()).isTrue();
                long deadline = System.nanoTime() + 60_000_000_000L;
                while (coordinator.running(shard) && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertThat(coordinator.drain(shard)).singleElement().satisfies(o -> assertThat(o.failed())
                        .isFalse());
                assertThat(table.pendingGenerations(shard)).isEmpty();
                while (coordinator.threadsRunning() && System.nanoTime() < deadline) {
                    Thread.sleep(50);
                }
                assertThat(coordinator.threadsRunning())
                        .as("idle: both threads stopped")
                        .isFalse();
            }
        }
    }
}
