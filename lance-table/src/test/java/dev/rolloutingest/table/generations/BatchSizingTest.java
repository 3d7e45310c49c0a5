package dev.rolloutingest.table.generations;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.time.Instant;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.complex.ListVector;
import org.junit.jupiter.api.Test;

/**
 * A table's next batch starts with its columns at the sizes its last sealed batch reached (so filling it allocates
 * nothing more), small again after a small one, and holds the same rows as a batch grown from Arrow's defaults.
 */
class BatchSizingTest {
    private static final Instant NOW = Instant.parse("2026-12-07T00:00:00Z");
    private final RolloutGenerator generator = new RolloutGenerator("sizing", 1_024, 5);

    private GenerationBatch filled(BufferAllocator allocator, BatchSizing sizing, int rows) {
        GenerationBatch batch = new GenerationBatch(allocator, name -> null, sizing);
        for (int i = 0; i < rows; i++) {
            batch.append(generator.rollout(i, 0), 0, i, NOW);
        }
        return batch;
    }

    @Test
    void aBatchStartsAtTheSizesTheLastSealedBatchReachedAndSmallAgainAfterASmallOne() {
        BatchSizing sizing = new BatchSizing();
        try (BufferAllocator allocator = new RootAllocator()) {
            long grown;
            try (GenerationBatch first = filled(allocator, sizing, 5_000)) {
                first.sealedRoot();
                grown = allocator.getAllocatedMemory();
            }
            try (GenerationBatch next = new GenerationBatch(allocator, name -> null, sizing)) {
                assertThat(payload(next).getByteCapacity()).isGreaterThanOrEqualTo(5_000 * 1_024);
                assertThat(tokens(next).getValueCapacity()).isGreaterThanOrEqualTo(5_000);
                long presized = allocator.getAllocatedMemory();
                for (int i = 0; i < 5_000; i++) {
                    next.append(generator.rollout(i, 0), 0, i, NOW);
                }
                assertThat(allocator.getAllocatedMemory())
                        .as("filled to the last batch's rows, no column grew")
                        .isEqualTo(presized);
                assertThat(presized).isLessThanOrEqualTo(grown + grown / 4);
                next.sealedRoot();
            }
            try (GenerationBatch trickle = filled(allocator, sizing, 10)) {
                trickle.sealedRoot();
            }
            long afterTrickle;
            try (GenerationBatch after = new GenerationBatch(allocator, name -> null, sizing)) {
                afterTrickle = allocator.getAllocatedMemory();
            }
            try (GenerationBatch fresh = new GenerationBatch(allocator, name -> null, null)) {
                assertThat(afterTrickle)
                        .as("after a batch of 10 rows, a batch starts below Arrow's defaults")
                        .isLessThan(allocator.getAllocatedMemory());
            }
        }
    }

    @Test
    void aPresizedBatchHoldsTheRowsAGrownOneHolds() {
        BatchSizing sizing = new BatchSizing();
        try (BufferAllocator allocator = new RootAllocator()) {
            try (GenerationBatch first = filled(allocator, sizing, 300)) {
                first.sealedRoot();
            }
            try (GenerationBatch presized = filled(allocator, sizing, 700);
                    GenerationBatch grown = filled(allocator, null, 700)) {
                List<RolloutRow> rows = ArrowRows.fromRoot(presized.sealedRoot());
                assertThat(rows).hasSize(700).isEqualTo(ArrowRows.fromRoot(grown.sealedRoot()));
            }
        }
    }

    private static LargeVarBinaryVector payload(GenerationBatch batch) {
        return (LargeVarBinaryVector) batch.sealedRoot().getVector(RolloutSchema.BINARY_PAYLOAD);
    }

    private static ListVector tokens(GenerationBatch batch) {
        return (ListVector) batch.sealedRoot().getVector(RolloutSchema.OUTPUT_TOKENS);
    }
}
