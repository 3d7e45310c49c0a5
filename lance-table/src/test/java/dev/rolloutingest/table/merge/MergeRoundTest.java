package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.VarCharVector;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/** Group commits: many shards' generations folded in one merge-insert, with every per-shard guarantee. */
class MergeRoundTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    /** Generations of 10 rows of distinct ids per partition: p<partition>-<offset>. */
    private static void generations(RolloutTable table, int partition, int count) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, partition);
        for (int g = 0; g < count; g++) {
            List<RolloutRow> rows = new ArrayList<>();
            for (long offset = g * 10L; offset < g * 10L + 10; offset++) {
                Rollout rollout = generator.rollout(offset, 0);
                rollout.setRecordId("p" + partition + "-" + offset);
                rows.add(new RolloutRow(rollout, partition, offset, Instant.now()));
            }
            table.generations().write(TOPIC, partition, g * 10L, g * 10L + 9, rows, 1000);
        }
    }

    private static List<String> shards(int count) {
        List<String> shards = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            shards.add(ShardId.of(TOPIC, p));
        }
        return shards;
    }

    private static long baseVersion(RolloutTable table) {
        try (org.apache.arrow.memory.RootAllocator allocator = new org.apache.arrow.memory.RootAllocator();
                Dataset base = Dataset.open()
                        .allocator(allocator)
                        .uri(table.location().uri())
                        .build()) {
            return base.version();
        }
    }

    private static RoundResult round(RolloutTable table, List<String> shards, int maxGenerations) {
        List<PreparedMerge> prepared = new ArrayList<>();
        for (MergePlan plan : MergeSteps.plan(table, shards, maxGenerations, 0)) {
            prepared.add(MergeSteps.prepare(table, plan));
        }
        return MergeSteps.commit(table, prepared);
    }

    @Test
    void oneCommitFoldsTheGenerationsOfManyShardsEachWithinItsCapAndInOrder() {
        try (RolloutTable table = localTable("round", meters)) {
            for (int p = 0; p < 8; p++) {
                generations(table, p, 3);
            }
            long before = baseVersion(table);
            RoundResult result = round(table, shards(8), 2);
            assertThat(result.failed()).isEmpty();
            assertThat(result.commits()).isEqualTo(1);
            // two Lance commits: the keys new to the base appended, then the merge-insert with every mark
            assertThat(baseVersion(table)).isEqualTo(before + 2);
            for (String shard : shards(8)) {
                MergeResult merged = result.merged().get(shard);
                assertThat(merged.mergedGenerations()).containsExactly(10L, 20L);
                assertThat(merged.leftover()).isEqualTo(1);
                assertThat(table.generations().watermarks().get(shard)).isEqualTo(20L);
                assertThat(table.generations().pending(shard))
                        .extracting(SealedGeneration::generation)
                        .containsExactly(30L);
            }
            assertThat(table.countBaseRows()).isEqualTo(8 * 20);
            assertThat(table.countRows()).isEqualTo(8 * 30);
            RoundResult rest = round(table, shards(8), 2);
            assertThat(rest.merged().values())
                    .allSatisfy(m -> assertThat(m.mergedGenerations()).containsExactly(30L));
            assertThat(round(table, shards(8), 2).merged().values()).noneMatch(MergeResult::mergedAnything);
        }
    }

    @Test
    void aShardWhoseRowsFailTheCommitIsTakenOutAndTheHealthyOnesMerge() {
        try (RolloutTable table = localTable("poisoned-round", meters)) {
            for (int p = 0; p < 6; p++) {
                generations(table, p, 2);
            }
            String poisonedId = "p3-4";
            TableSeams.failDatasetWrites(table, batch -> {
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    if (new String(ids.get(i), StandardCharsets.UTF_8).equals(poisonedId)) {
                        return "refused " + poisonedId;
                    }
                }
                return null;
            });
            RoundResult result = round(table, shards(6), 8);
            String poisoned = ShardId.of(TOPIC, 3);
            assertThat(result.failed()).containsOnlyKeys(poisoned);
            assertThat(result.failed().get(poisoned)).hasMessageContaining("refused");
            assertThat(result.merged()).hasSize(5).allSatisfy((shard, merged) -> assertThat(merged.mergedGenerations())
                    .containsExactly(10L, 20L));
            assertThat(result.commits())
                    .as("one try, then halves down to the poisoned shard")
                    .isBetween(3, 6);
            assertThat(table.generations().pending(poisoned)).hasSize(2);
            assertThat(table.get("p2-15")).isPresent();
        }
    }

    @Test
    void aShardMergedBetweenItsPlanAndTheCommitIsLeftOutNotMergedTwice() {
        try (RolloutTable table = localTable("moved-watermark", meters)) {
            generations(table, 0, 2);
            generations(table, 1, 2);
            List<PreparedMerge> prepared = new ArrayList<>();
            for (MergePlan plan : MergeSteps.plan(table, shards(2), 1, 0)) {
                prepared.add(MergeSteps.prepare(table, plan));
            }
            table.merges()
                    .pass(MergeRequest.of(ShardId.of(TOPIC, 0))
                            .limits(2, 0)); // another committer merged shard 0 meanwhile
            RoundResult result = MergeSteps.commit(table, prepared);
            assertThat(result.merged().get(ShardId.of(TOPIC, 0)).mergedAnything())
                    .isFalse();
            assertThat(result.merged().get(ShardId.of(TOPIC, 1)).mergedGenerations())
                    .containsExactly(10L);
            assertThat(table.generations().watermarks().get(ShardId.of(TOPIC, 0)))
                    .isEqualTo(20L);
            assertThat(table.countRows()).isEqualTo(40);
        }
    }

    @Test
    void aKeyInTwoShardsOfOneRoundKeepsTheRowIngestedLast() {
        try (RolloutTable table = localTable("round-two-shards", meters)) {
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 1);
            Rollout old = generator.rollout(1, 1);
            old.setRecordId("moved");
            Rollout recent = generator.rollout(1, 2);
            recent.setRecordId("moved");
            table.generations()
                    .write(
                            TOPIC,
                            0,
                            900,
                            900,
                            List.of(new RolloutRow(old, 0, 900, Instant.parse("2026-11-30T10:00:00Z"))),
                            10);
            table.generations()
                    .write(
                            TOPIC,
                            1,
                            5,
                            5,
                            List.of(new RolloutRow(recent, 1, 5, Instant.parse("2026-11-30T10:00:01Z"))),
                            10);
            RoundResult result = round(table, shards(2), 8);
            assertThat(result.failed()).isEmpty();
            assertThat(result.commits()).isEqualTo(1);
            assertThat(table.countBaseRows()).isEqualTo(1);
            assertThat(table.get("moved").orElseThrow().sourcePartition()).isEqualTo(1);
        }
    }
}
