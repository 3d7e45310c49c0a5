package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MergePassTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final String shard = ShardId.of(TOPIC, 0);

    @Test
    void mergePassIsBoundedAndLeftoversSurvive() {
        try (RolloutTable table = localTable("bounded", meters)) {
            // 100 generations of 10 offsets each over 400 distinct keys: keys repeat across generations.
            for (int g = 0; g < 100; g++) {
                table.generations()
                        .write(TOPIC, 0, g * 10L, g * 10L + 9, rowsOverKeys(g * 10L, g * 10L + 9, 400), 1000);
            }
            List<MergeResult> passes = new ArrayList<>();
            MergeResult pass;
            do {
                pass = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
                if (pass.mergedAnything()) {
                    passes.add(pass);
                    assertThat(pass.mergedGenerations()).hasSizeLessThanOrEqualTo(8);
                    assertThat(pass.leftover())
                            .isEqualTo(table.generations().pending(shard).size());
                }
            } while (pass.mergedAnything());
            assertThat(passes).hasSize(13); // 12 x 8 + 4
            List<Long> merged =
                    passes.stream().flatMap(p -> p.mergedGenerations().stream()).toList();
            assertThat(merged).isSorted().doesNotHaveDuplicates().hasSize(100);
            assertThat(table.generations().watermarks()).containsEntry(shard, 1000L);
            assertThat(table.countBaseRows()).isEqualTo(400);
            Set<String> ids = new HashSet<>();
            for (RolloutRow row : table.list(ListQuery.all(1000))) {
                assertThat(ids.add(row.recordId()))
                        .as("duplicate " + row.recordId())
                        .isTrue();
                // Key k is written at offsets k, k + 400, k + 800 (below 1000): the highest one wins.
                long k = Long.parseLong(row.recordId().substring("exp-".length()));
                assertThat(row.sourceOffset()).isEqualTo(k + 800 < 1000 ? k + 800 : k + 400);
            }
            assertThat(ids).hasSize(400);
        }
    }

    @Test
    void byteBudgetStopsAPassButAlwaysTakesTheOldestGeneration() {
        try (RolloutTable table = localTable("bytes", meters)) {
            for (int g = 0; g < 5; g++) {
                table.generations().write(TOPIC, 0, g * 10L, g * 10L + 9, rows(0, g * 10L, g * 10L + 9, 100), 1000);
            }
            assertThat(table.merges()
                            .pass(MergeRequest.of(shard).limits(0, 2500))
                            .mergedGenerations())
                    .containsExactly(10L, 20L);
            assertThat(table.merges().pass(MergeRequest.of(shard).limits(0, 10)).mergedGenerations())
                    .containsExactly(30L);
            MergeResult rest = table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            assertThat(rest.mergedGenerations()).containsExactly(40L, 50L);
            assertThat(rest.leftover()).isZero();
            assertThat(table.countBaseRows()).isEqualTo(50);
        }
    }

    @Test
    void zeroGenerationsMeansUnbounded() {
        try (RolloutTable table = localTable("unbounded", meters)) {
            for (int g = 0; g < 12; g++) {
                write(table, 0, g * 5L, g * 5L + 4, 30);
            }
            assertThat(table.merges().pass(MergeRequest.of(shard).limits(0, 0)).mergedGenerations())
                    .hasSize(12);
        }
    }

    @Test
    void mergePhasesAreTimedSeparately() {
        try (RolloutTable table = localTable("timed", meters)) {
            write(table, 0, 0, 9, 10);
            MergeResult result = table.merges().pass(MergeRequest.of(shard).limits(8, 0));
            assertThat(result.readDuration()).isPositive();
            assertThat(result.commitDuration()).isPositive();
            assertThat(meters.get("rollout.merge.phase")
                            .tag("phase", "read")
                            .timer()
                            .count())
                    .isEqualTo(1);
            assertThat(meters.get("rollout.merge.phase")
                            .tag("phase", "commit")
                            .timer()
                            .count())
                    .isEqualTo(1);
        }
    }

    private static List<RolloutRow> rowsOverKeys(long first, long last, int keys) {
        return rows(0, first, last, keys);
    }
}
