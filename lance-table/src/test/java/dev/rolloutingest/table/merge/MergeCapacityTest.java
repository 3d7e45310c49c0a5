package dev.rolloutingest.table.merge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.SharedByTables;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.storage.SharedLanceCache;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The merge capacity tables share: rounds in turn, never more in flight than the bound. */
class MergeCapacityTest {
    private static final String TOPIC = "rollouts";
    private static final String SHARD = ShardId.of(TOPIC, 0);
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "merge-capacity", UUID.randomUUID().toString()).toAbsolutePath();

    private RolloutTable table(String name, SharedByTables shared, TableSettings settings) {
        return RolloutTable.createOrOpen(TableLocation.local(dir.resolve(name)), settings, meters, shared);
    }

    private static void generations(RolloutTable table, int count) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, 0);
        for (int g = 0; g < count; g++) {
            List<RolloutRow> rows = new ArrayList<>();
            for (long offset = g * 10L; offset < g * 10L + 10; offset++) {
                rows.add(new RolloutRow(generator.rollout(offset, 0), 0, offset, Instant.now()));
            }
            table.generations().write(TOPIC, 0, g * 10L, g * 10L + 9, rows, 1000);
        }
    }

    @Test
    void aTableThatJustHadItsTurnQueuesBehindTheTablesAlreadyWaiting() throws Exception {
        try (MergeCapacity capacity = new MergeCapacity(1, 1, Duration.ofSeconds(5))) {
            assertThat(capacity.admit()).isDone(); // the hot table's round
            CompletableFuture<Void> coldTurn = capacity.admit();
            CompletableFuture<Void> hotAgain = capacity.admit();
            assertThat(capacity.waiting()).isEqualTo(2);
            capacity.release();
            assertThat(coldTurn).isDone();
            assertThat(hotAgain)
                    .as("the hot table waits for the cold one's round")
                    .isNotDone();
            capacity.release();
            assertThat(hotAgain).isDone();
            capacity.release();
            assertThat(capacity.mostInFlight()).isEqualTo(1);
            assertThat(capacity.admit())
                    .as("nothing in flight: granted at once")
                    .isDone();
        }
    }

    @Test
    void commitsOfManyTablesRunSideBySideNeverMoreThanTheBound() throws Exception {
        int tableCount = 6;
        AtomicInteger committing = new AtomicInteger();
        AtomicInteger mostCommitting = new AtomicInteger();
        List<RolloutTable> tables = new ArrayList<>();
        try (SharedByTables shared =
                new SharedByTables(new SharedLanceCache(64L << 20), new MergeCapacity(2, 2, Duration.ofSeconds(5)))) {
            try {
                for (int t = 0; t < tableCount; t++) {
                    RolloutTable table = table("t" + t, shared, TableSettings.DEFAULTS);
                    tables.add(table);
                    generations(table, 3);
                    TableSeams.failMergeCommitsAt(table, stage -> {
                        if (stage == CommitStage.CHECKED) {
                            mostCommitting.accumulateAndGet(committing.incrementAndGet(), Math::max);
                            sleep(300); // a commit long enough for the others to start beside it if they may
                        } else if (stage == CommitStage.MARKED) {
                            committing.decrementAndGet();
                        }
                    });
                }
                List<CompletableFuture<MergeResult>> merges = new ArrayList<>();
                tables.forEach(t -> merges.add(t.merges().request(SHARD)));
                for (CompletableFuture<MergeResult> merge : merges) {
                    assertThat(merge.get(120, TimeUnit.SECONDS).mergedGenerations())
                            .hasSize(3);
                }
                assertThat(mostCommitting.get())
                        .as("commits of different tables overlap, up to the bound")
                        .isEqualTo(2);
                assertThat(shared.merges().mostInFlight()).isEqualTo(2);
            } finally {
                tables.forEach(RolloutTable::close);
            }
        }
    }

    @Test
    void aHotTableServedRoundAfterRoundDoesNotStarveAColdOne() throws Exception {
        List<RolloutTable> tables = new ArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        try (SharedByTables shared =
                new SharedByTables(new SharedLanceCache(64L << 20), new MergeCapacity(2, 1, Duration.ofSeconds(5)))) {
            try {
                TableSettings onePerPass = TableSettings.DEFAULTS.with(TableSettings.MERGE_MAX_GENERATIONS, 1);
                List<RolloutTable> hot = new ArrayList<>();
                for (String name : List.of("hot-0", "hot-1")) {
                    RolloutTable table = table(name, shared, onePerPass);
                    tables.add(table);
                    hot.add(table);
                    generations(table, 30);
                }
                RolloutTable cold = table("cold", shared, TableSettings.DEFAULTS);
                tables.add(cold);
                generations(cold, 1);
                // One generation per pass, and the next asked for at once: always a round waiting.
                hot.forEach(table -> keepMerging(table, stop));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (hotRounds(hot) < 4 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                long before = hotRounds(hot);
                MergeResult result = cold.merges().request(SHARD).get(120, TimeUnit.SECONDS);
                long during = hotRounds(hot) - before;
                assertThat(result.mergedGenerations()).hasSize(1);
                assertThat(during)
                        .as("the cold table's round came after at most one round of each hot table (and the one"
                                + " being committed)")
                        .isLessThanOrEqualTo(4);
                assertThat(tables.get(0).generations().pending(SHARD))
                        .as("the hot table was still being served")
                        .isNotEmpty();
            } finally {
                stop.set(true);
                tables.forEach(RolloutTable::close);
            }
        }
    }

    /** Asks for the table's next pass as soon as the last one is done, until stopped or nothing is left. */
    private static void keepMerging(RolloutTable table, AtomicBoolean stop) {
        table.merges().request(SHARD).whenComplete((result, error) -> {
            if (error == null && !stop.get() && result.leftover() > 0) {
                keepMerging(table, stop);
            }
        });
    }

    private static long hotRounds(List<RolloutTable> hot) {
        return hot.stream()
                .map(t -> t.merges().lastRound())
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
