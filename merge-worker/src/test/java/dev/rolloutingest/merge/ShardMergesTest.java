package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The passes a merge-worker asks of its tables: continued while a backlog stays, let go with their task. */
class ShardMergesTest {
    private static final String TOPIC = "rollouts";
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "shard-merges", UUID.randomUUID().toString()).toAbsolutePath();

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
            table.generations().write(TOPIC, 0, g * 10L, g * 10L + 9, rows, 1000);
        }
    }

    private MergeTables tables(RolloutTable table, int continueAtLeftover) {
        return new MergeTables(
                TableCatalog.single(table), new ShardMerges(new MergeMetrics(meters), continueAtLeftover, r -> {}));
    }

    @Test
    void aShardLeavingAFullPassBehindIsMergedAgainAtOnceUntilItsBacklogIsUnderTheTrigger() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters);
                MergeTables tables = tables(table, 8)) {
            generations(table, 28); // 3 full passes of 8, then 4 left: under the trigger of 8
            assertThat(tables.passes().submit(shard, table, shard, MergeTrigger.COUNT))
                    .isTrue();
            assertThat(tables.passes().submit(shard, table, shard, MergeTrigger.COUNT))
                    .as("one automatic pass of a shard at a time")
                    .isFalse();
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (tables.passes().running(shard) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(tables.passes().running(shard)).isFalse();
            List<ShardMerges.Outcome> outcomes = tables.passes().drain(shard);
            assertThat(outcomes).hasSize(3).allSatisfy(o -> {
                assertThat(o.failed()).isFalse();
                assertThat(o.trigger()).isEqualTo(MergeTrigger.COUNT);
                assertThat(o.result().mergedGenerations()).hasSize(8);
            });
            assertThat(table.generations().watermarks().get(shard)).isEqualTo(240L);
            assertThat(table.generations().pending(shard)).hasSize(4);
        }
    }

    @Test
    void aTaskLettingGoOfItsShardsWithdrawsTheirPassesAndWaitsForTheirRoundToCommit() throws Exception {
        String shard = ShardId.of(TOPIC, 0);
        try (RolloutTable table = RolloutTable.createOrOpen(TableLocation.local(dir), TableSettings.DEFAULTS, meters);
                MergeTables tables = tables(table, 1)) {
            MergeTables.Merging merging = tables.of(TableCatalog.SINGLE).orElseThrow();
            generations(table, 11); // a pass of 8 leaves 3: continued at once, unless let go
            CountDownLatch inCommit = new CountDownLatch(1);
            CountDownLatch letGo = new CountDownLatch(1);
            TableSeams.failMergeCommitsAt(table, stage -> {
                if (stage == CommitStage.CHECKED && inCommit.getCount() > 0) {
                    inCommit.countDown();
                    try {
                        letGo.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            assertThat(tables.passes().submit(shard, table, shard, MergeTrigger.COUNT))
                    .isTrue();
            assertThat(inCommit.await(60, TimeUnit.SECONDS)).isTrue();

            CompletableFuture<Void> released = CompletableFuture.runAsync(
                    () -> tables.passes().release(List.of(merging), (t, s) -> s.equals(shard), Duration.ofSeconds(60)));
            Thread.sleep(500);
            assertThat(released).as("waits for the round that holds the shard").isNotDone();

            letGo.countDown();
            released.get(60, TimeUnit.SECONDS);
            assertThat(table.generations().watermarks().get(shard))
                    .as("the round committed before the release returned")
                    .isEqualTo(80L);
            Thread.sleep(500);
            assertThat(tables.passes().running(shard))
                    .as("not continued once let go")
                    .isFalse();
            assertThat(table.generations().watermarks().get(shard)).isEqualTo(80L);
            assertThat(table.generations().pending(shard)).hasSize(3);
        }
    }
}
