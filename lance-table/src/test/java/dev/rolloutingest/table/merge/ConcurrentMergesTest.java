package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ConcurrentMergesTest {
    @Test
    void mergesOfDifferentShardsFromConcurrentThreadsAllLandWhileReadsStayCorrect() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        int shards = 4;
        try (RolloutTable table = localTable("concurrent", meters)) {
            for (int p = 0; p < shards; p++) {
                for (int g = 0; g < 6; g++) {
                    // Distinct keys per partition: p * 1000 + (offset % 20).
                    List<RolloutRow> rows = new ArrayList<>();
                    for (RolloutRow row : rows(p, g * 10L, g * 10L + 9, 20)) {
                        row.rollout().setRecordId("p" + p + "-" + row.rollout().getRecordId());
                        rows.add(row);
                    }
                    table.generations().write(TOPIC, p, g * 10L, g * 10L + 9, rows, 100);
                }
            }
            AtomicBoolean merging = new AtomicBoolean(true);
            // The merges start once a read has: reads and merges overlap however the threads are scheduled.
            CountDownLatch reading = new CountDownLatch(1);
            ExecutorService pool = Executors.newFixedThreadPool(shards + 1);
            List<Future<?>> merges = new ArrayList<>();
            for (int p = 0; p < shards; p++) {
                String shard = ShardId.of(TOPIC, p);
                merges.add(pool.submit(() -> {
                    assertThat(reading.await(60, TimeUnit.SECONDS))
                            .as("a read before the merges")
                            .isTrue();
                    while (table.merges()
                            .pass(MergeRequest.of(shard).limits(2, 0))
                            .mergedAnything()) {
                        // drain
                    }
                    return null;
                }));
            }
            Future<Integer> reads = pool.submit(() -> {
                int count = 0;
                while (merging.get()) {
                    // Every read sees all 80 keys, each at its newest offset (40..59), whatever merges run.
                    assertThat(table.countRows()).isEqualTo(shards * 20L);
                    assertThat(table.get("p2-exp-7").orElseThrow().sourceOffset())
                            .isEqualTo(47);
                    count++;
                    reading.countDown();
                }
                return count;
            });
            for (Future<?> merge : merges) {
                merge.get(120, TimeUnit.SECONDS);
            }
            merging.set(false);
            assertThat(reads.get(60, TimeUnit.SECONDS)).isPositive();
            pool.shutdown();
            for (int p = 0; p < shards; p++) {
                assertThat(table.generations().watermarks()).containsEntry(ShardId.of(TOPIC, p), 60L);
            }
            assertThat(table.countBaseRows()).isEqualTo(shards * 20L);
        }
    }
}
