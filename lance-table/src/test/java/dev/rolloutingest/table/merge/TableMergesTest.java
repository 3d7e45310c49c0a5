package dev.rolloutingest.table.merge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A table's merges: one committer, rounds of the shards asked for together, a bounded memory, a clean stop. */
class TableMergesTest {
    private static final String TOPIC = "rollouts";
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "table-merges", UUID.randomUUID().toString()).toAbsolutePath();

    private RolloutTable table(TableSettings settings) {
        return RolloutTable.createOrOpen(TableLocation.local(dir), settings, meters);
    }

    /** Generations {@code first .. first + count - 1} of partition {@code partition}, 10 offsets each. */
    private static void generations(RolloutTable table, int partition, int first, int count) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, partition);
        for (int g = first; g < first + count; g++) {
            List<RolloutRow> rows = new ArrayList<>();
            for (long offset = g * 10L; offset < g * 10L + 10; offset++) {
                rows.add(new RolloutRow(
                        generator.rollout(offset + partition * 1_000_000L, 0), partition, offset, Instant.now()));
            }
            table.generations().write(TOPIC, partition, g * 10L, g * 10L + 9, rows, 1000);
        }
    }

    @Test
    void aSnapshotFoldsThroughTheTablesOneCommitterAndTakesNoGenerationAboveTheCut() {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = table(TableSettings.DEFAULTS.with(TableSettings.MERGE_MAX_GENERATIONS, 2))) {
            generations(table, 0, 0, 6); // generations 10, 20, ..., 60
            Set<String> committers = ConcurrentHashMap.newKeySet();
            TableSeams.failMergeCommitsAt(
                    table, stage -> committers.add(Thread.currentThread().getName()));

            TableSnapshots.Snapshot snapshot =
                    table.snapshots().create("cut", new TableSnapshots.Cut(TOPIC, Map.of(0, 45L)));

            assertThat(committers).singleElement().asString().startsWith("merge-commit");
            assertThat(snapshot.offsets()).containsEntry(TOPIC + ":0", 40L); // a cut inside a generation ends before it
            assertThat(table.generations().watermarks().get(shard)).isEqualTo(40L);
            assertThat(table.generations().pending(shard)).hasSize(2);
        }
    }

    @Test
    void shardsAskedForTogetherShareOneRoundAndOneCommit() {
        try (RolloutTable table = table(TableSettings.DEFAULTS)) {
            List<MergeRequest> requests = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                generations(table, p, 0, 2);
                requests.add(MergeRequest.of(ShardId.of(TOPIC, p)));
            }
            List<CompletableFuture<MergeResult>> passes = table.merges().requestAll(requests);
            passes.forEach(pass -> assertThat(pass.join().mergedGenerations()).containsExactly(10L, 20L));
            TableMerges.RoundSummary round = table.merges().lastRound();
            assertThat(round.shards()).isEqualTo(3);
            assertThat(round.commits()).isEqualTo(1);
            assertThat(round.rows()).isEqualTo(60);
        }
    }

    @Test
    void aShardAskedForWhileItsRoundCommitsIsServedByTheNextRoundFromTheNewWatermark() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = table(TableSettings.DEFAULTS.with(TableSettings.MERGE_MAX_GENERATIONS, 2))) {
            generations(table, 0, 0, 4);
            CountDownLatch inCommit = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.CHECKED && inCommit.getCount() > 0) {
                    inCommit.countDown();
                    await(letGo);
                }
            });
            CompletableFuture<MergeResult> first = table.merges().request(shard);
            assertThat(inCommit.await(60, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<MergeResult> second = table.merges().request(shard);
            Thread.sleep(300);
            assertThat(second).as("waits for the round that holds its shard").isNotDone();
            letGo.countDown();
            assertThat(first.get(60, TimeUnit.SECONDS).mergedGenerations()).containsExactly(10L, 20L);
            assertThat(second.get(60, TimeUnit.SECONDS).mergedGenerations()).containsExactly(30L, 40L);
        }
    }

    @Test
    void aRoundOverTheRoundByteBudgetLeavesTheShardsPastItForTheNextRound() {
        // each generation's seal says 1,000 bytes: a round of 4,500 bytes takes two shards of two generations
        try (RolloutTable table = table(TableSettings.DEFAULTS.with(TableSettings.MERGE_ROUND_MAX_BYTES, 4_500L))) {
            List<MergeRequest> requests = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                generations(table, p, 0, 2);
                requests.add(MergeRequest.of(ShardId.of(TOPIC, p)));
            }
            List<CompletableFuture<MergeResult>> passes = table.merges().requestAll(requests);
            passes.forEach(pass -> assertThat(pass.join().mergedGenerations()).containsExactly(10L, 20L));
            assertThat(table.merges().lastRound().shards())
                    .as("the shard past the budget merged in a round of its own")
                    .isEqualTo(1);
            assertThat(table.merges().lastRound().round()).isEqualTo(2);
        }
    }

    @Test
    void closingLetsTheRoundInItsCommitFinishAndAbandonsTheOneWaitingForIt() throws Exception {
        String first = ShardId.of(TOPIC, 0);
        String second = ShardId.of(TOPIC, 1);
        try (RolloutTable table = table(TableSettings.DEFAULTS)) {
            generations(table, 0, 0, 2);
            generations(table, 1, 0, 1);
            CountDownLatch inCommit = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.CHECKED && inCommit.getCount() > 0) {
                    inCommit.countDown();
                    await(letGo);
                }
            });
            CompletableFuture<MergeResult> committing = table.merges().request(first);
            assertThat(inCommit.await(60, TimeUnit.SECONDS)).isTrue();
            // the next round is prepared and waits for the committer, which is held in the first
            CompletableFuture<MergeResult> waiting = table.merges().request(second);
            Thread.sleep(1_000);
            CompletableFuture<Void> closed = CompletableFuture.runAsync(table.merges()::close);
            Thread.sleep(500);
            assertThat(closed).as("close waits for the round in its commit").isNotDone();
            letGo.countDown();
            closed.get(60, TimeUnit.SECONDS);

            assertThat(committing.get(60, TimeUnit.SECONDS).newWatermark())
                    .as("the round in the commit finished")
                    .isEqualTo(20L);
            assertThatThrownBy(() -> waiting.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(TableMerges.RoundFailed.class)
                    .hasMessageContaining("merges are stopping");
            assertThat(TableMerges.tableUnavailable(waiting.handle((r, e) -> e).join()))
                    .as("an abandoned round is the table's matter, not the shard's")
                    .isTrue();
            assertThat(table.generations().watermarks()).doesNotContainKey(second);
            assertThat(table.merges().request(second))
                    .as("a closed table's merges refuse new requests")
                    .isCompletedExceptionally();
        }
    }

    @Test
    void aCancelledRequestIsWithdrawnAndSettledWaitsForTheRoundHoldingTheShard() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = table(TableSettings.DEFAULTS)) {
            generations(table, 0, 0, 3);
            CountDownLatch inCommit = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.CHECKED && inCommit.getCount() > 0) {
                    inCommit.countDown();
                    await(letGo);
                }
            });
            CompletableFuture<MergeResult> running = table.merges().request(shard);
            assertThat(inCommit.await(60, TimeUnit.SECONDS)).isTrue();
            generations(table, 0, 3, 1);
            CompletableFuture<MergeResult> queued = table.merges().request(shard);
            queued.cancel(false);
            CompletableFuture<Void> settled = table.merges().settled(shard::equals);
            Thread.sleep(500);
            assertThat(settled).as("waits for the round that holds the shard").isNotDone();

            letGo.countDown();
            settled.get(60, TimeUnit.SECONDS);
            assertThat(running.get(60, TimeUnit.SECONDS).newWatermark()).isEqualTo(30L);
            Thread.sleep(500);
            assertThat(table.generations().watermarks().get(shard))
                    .as("the withdrawn request merged nothing")
                    .isEqualTo(30L);
            assertThat(table.generations().pending(shard)).hasSize(1);
        }
    }

    @Test
    void theCommitterThreadStopsWhenIdleAndStartsAgainWithTheNextRequest() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table =
                table(TableSettings.DEFAULTS.with(TableSettings.MERGE_THREADS_IDLE_STOP_MS, 1_000L))) {
            assertThat(table.merges().committerRunning())
                    .as("no thread before the first request")
                    .isFalse();
            for (int pass = 0; pass < 2; pass++) {
                generations(table, 0, 4 * pass, 4);
                assertThat(table.merges().pass(MergeRequest.of(shard)).mergedGenerations())
                        .hasSize(4);
                assertThat(table.merges().committerRunning()).isTrue();
                assertThat(table.merges().capacity().preparerThreads()).isPositive();
                long deadline = System.nanoTime() + 60_000_000_000L;
                while ((table.merges().committerRunning()
                                || table.merges().capacity().preparerThreads() > 0)
                        && System.nanoTime() < deadline) {
                    Thread.sleep(50);
                }
                assertThat(table.merges().committerRunning())
                        .as("idle: the committer stopped")
                        .isFalse();
                assertThat(table.merges().capacity().preparerThreads())
                        .as("idle: the preparers stopped")
                        .isZero();
            }
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
