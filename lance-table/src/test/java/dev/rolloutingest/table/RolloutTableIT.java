package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class RolloutTableIT {
    @Test
    void writeReadMergeCycleOnLocalDisk() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = localTable("cycle", meters)) {
            String shard = ShardId.of(TOPIC, 0);
            write(table, 0, 0, 99, 50);     // keys 0..49 twice: offsets 50..99 win
            write(table, 0, 100, 149, 50);  // rewrites 0..49 again with offsets 100..149
            assertThat(table.pendingGenerations(shard)).extracting(SealedGeneration::generation).containsExactly(100L, 150L);
            assertThat(table.countRows()).isEqualTo(50);
            RolloutRow row = table.get("exp-7").orElseThrow();
            assertThat(row.sourceOffset()).isEqualTo(107);

            MergeResult result = table.mergePass(shard, 8, 0);
            System.out.println(result);
            assertThat(result.mergedGenerations()).containsExactly(100L, 150L);
            assertThat(table.watermarks()).containsEntry(shard, 150L);
            assertThat(table.pendingGenerations(shard)).isEmpty();
            assertThat(table.countBaseRows()).isEqualTo(50);
            assertThat(table.get("exp-7").orElseThrow().sourceOffset()).isEqualTo(107);
        }
    }
}
