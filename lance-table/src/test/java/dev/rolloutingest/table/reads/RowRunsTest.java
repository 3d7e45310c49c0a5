package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.T0;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.compare.VectorEqualsVisitor;
import org.junit.jupiter.api.Test;

/** Runs of rows copied a run at a time hold exactly what a row-by-row copy of the same rows holds, every type. */
class RowRunsTest {
    @Test
    void aCopyByRunsEqualsARowByRowCopyOfTheSameRowsForEveryColumn() {
        try (BufferAllocator allocator = new RootAllocator();
                VectorSchemaRoot batch = ArrowRows.toRoot(allocator, rows(300))) {
            // nulls in a nullable fixed-width and a large binary column
            Float4Vector rewards = (Float4Vector) batch.getVector(RolloutSchema.REWARD);
            LargeVarBinaryVector payloads = (LargeVarBinaryVector) batch.getVector(RolloutSchema.BINARY_PAYLOAD);
            for (int i = 0; i < 300; i += 7) {
                rewards.setNull(i);
                payloads.setNull(i + 3);
            }
            SplittableRandom random = new SplittableRandom(11);
            for (int attempt = 0; attempt < 20; attempt++) {
                RowRuns runs = new RowRuns();
                List<Integer> kept = new ArrayList<>();
                int at = 0;
                while (at < 300) {
                    int length = random.nextInt(0, 40);
                    for (int i = at; i < Math.min(300, at + length); i++) {
                        kept.add(i);
                    }
                    runs.add(at, Math.min(300, at + length) - at);
                    at += length + random.nextInt(1, 5); // then a gap of dropped rows
                }
                if (attempt % 5 == 0) {
                    int n = kept.size() / 2;
                    runs.truncate(n);
                    kept = kept.subList(0, n);
                }
                assertThat(runs.rows()).isEqualTo(kept.size());
                for (FieldVector from : batch.getFieldVectors()) {
                    try (FieldVector byRuns = from.getField().createVector(allocator);
                            FieldVector byRows = from.getField().createVector(allocator)) {
                        runs.copy(from, byRuns);
                        byRows.setInitialCapacity(kept.size());
                        byRows.allocateNew();
                        for (int k = 0; k < kept.size(); k++) {
                            byRows.copyFromSafe(kept.get(k), k, from);
                        }
                        byRows.setValueCount(kept.size());
                        assertThat(VectorEqualsVisitor.vectorEquals(byRows, byRuns))
                                .as("column %s, attempt %d", from.getName(), attempt)
                                .isTrue();
                        assertThat(byRuns.getValueCount()).isEqualTo(kept.size());
                    }
                }
            }
        }
    }

    @Test
    void anEmptyRunAddsNothingAndAdjacentRunsJoin() {
        RowRuns runs = new RowRuns();
        runs.add(0, 0);
        runs.add(0, 5);
        runs.add(5, 3);
        runs.add(10, 2);
        assertThat(runs.rows()).isEqualTo(10);
        runs.truncate(9);
        assertThat(runs.rows()).isEqualTo(9);
        runs.truncate(0);
        assertThat(runs.rows()).isZero();
    }

    private static List<RolloutRow> rows(int n) {
        RolloutGenerator generator = new RolloutGenerator("exp", 64, 3);
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Rollout rollout = i % 11 == 0 ? Tombstones.of("d-" + i, T0) : generator.rollout(i, i);
            rows.add(new RolloutRow(rollout, i % 3, i, T0.plusMillis(i)));
        }
        return rows;
    }
}
