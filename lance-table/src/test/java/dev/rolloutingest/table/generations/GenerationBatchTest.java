package dev.rolloutingest.table.generations;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Timestamps;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.vector.VarCharVector;
import org.junit.jupiter.api.Test;

/** The Arrow-backed batch a partition fills: refusals at accept time, the write-failure probe, exact timestamps. */
class GenerationBatchTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final RolloutGenerator generator = new RolloutGenerator("exp", 8, 3);

    private Rollout rollout(long key) {
        return generator.rollout(key, (int) key);
    }

    @Test
    void timestampsAtBothEndsOfTheMicrosecondRangeLandAndReadBackExactly() {
        Instant earliest = Instant.ofEpochSecond(
                Math.floorDiv(Long.MIN_VALUE, 1_000_000L), Math.floorMod(Long.MIN_VALUE, 1_000_000L) * 1_000L);
        Instant latest = Instant.ofEpochSecond(
                Math.floorDiv(Long.MAX_VALUE, 1_000_000L), Math.floorMod(Long.MAX_VALUE, 1_000_000L) * 1_000L);
        assertThat(Timestamps.micros(earliest)).isEqualTo(Long.MIN_VALUE);
        assertThat(Timestamps.micros(latest)).isEqualTo(Long.MAX_VALUE);
        try (RolloutTable table = localTable("extreme-ts", meters)) {
            Rollout early = rollout(1);
            early.setCreatedAt(earliest);
            Rollout late = rollout(2);
            late.setCreatedAt(latest);
            table.generations()
                    .write(
                            TOPIC,
                            0,
                            0,
                            1,
                            List.of(
                                    new RolloutRow(early, 0, 0, Instant.now()),
                                    new RolloutRow(late, 0, 1, Instant.now())),
                            10);
            assertThat(table.get(early.getRecordId()).orElseThrow().rollout().getCreatedAt())
                    .isEqualTo(earliest);
            assertThat(table.get(late.getRecordId()).orElseThrow().rollout().getCreatedAt())
                    .isEqualTo(latest);
        }
    }

    @Test
    void aRowTheTableCannotRepresentIsRefusedOnAppendAndLeavesTheBatchAsItWas() {
        try (RolloutTable table = localTable("refused", meters);
                GenerationBatch batch = table.generations().newBatch()) {
            batch.append(rollout(1), 0, 10, Instant.now());
            Rollout outOfRange = rollout(2);
            outOfRange.setCreatedAt(Instant.MAX);
            assertThatThrownBy(() -> batch.append(outOfRange, 0, 11, Instant.now()))
                    .isInstanceOf(RolloutTableException.Unrepresentable.class)
                    .hasMessageContaining("created_at");
            batch.append(rollout(3), 0, 12, Instant.now());
            assertThat(batch.size()).isEqualTo(2);
            table.generations().write(TOPIC, 0, 10, 12, batch, 30, List.of());
            assertThat(table.get(rollout(1).getRecordId())).isPresent();
            assertThat(table.get(rollout(2).getRecordId())).isEmpty();
            assertThat(table.get(rollout(3).getRecordId())).isPresent();
        }
    }

    @Test
    void theProbeFindsExactlyTheRowsAWriteRefusesAndNothingWhenTheStoreIsAtFault() {
        try (RolloutTable table = localTable("probe", meters);
                GenerationBatch batch = table.generations().newBatch()) {
            for (long offset = 0; offset < 40; offset++) {
                batch.append(rollout(offset), 0, offset, Instant.now());
            }
            assertThat(table.generations().findUnwritableRows(batch))
                    .as("a batch that writes to memory is the store's problem")
                    .isEmpty();
            String bad7 = rollout(7).getRecordId();
            String bad31 = rollout(31).getRecordId();
            TableSeams.failDatasetWrites(table, root -> {
                VarCharVector ids = (VarCharVector) root.getVector(RolloutSchema.RECORD_ID);
                for (int i = 0; i < root.getRowCount(); i++) {
                    String id = new String(ids.get(i));
                    if (id.equals(bad7) || id.equals(bad31)) {
                        return "refused " + id;
                    }
                }
                return null;
            });
            Map<Long, String> unwritable = table.generations().findUnwritableRows(batch);
            assertThat(unwritable).containsOnlyKeys(7L, 31L);
            assertThat(unwritable.get(7L)).contains(bad7);
            try (GenerationBatch rest = batch.without(unwritable.keySet())) {
                assertThat(rest.size()).isEqualTo(38);
                table.generations()
                        .write(
                                TOPIC,
                                0,
                                0,
                                39,
                                rest,
                                400,
                                List.of(
                                        new SealedGeneration.DeadLettered(7, "unwritable", unwritable.get(7L)),
                                        new SealedGeneration.DeadLettered(31, "unwritable", unwritable.get(31L))));
            }
            TableSeams.failDatasetWrites(table, null);
            SealedGeneration sealed =
                    table.generations().pending(ShardId.of(TOPIC, 0)).get(0);
            assertThat(sealed.rows()).isEqualTo(38);
            assertThat(sealed.deadLettered())
                    .extracting(SealedGeneration.DeadLettered::offset)
                    .containsExactly(7L, 31L);
            assertThat(table.get(bad7)).isEmpty();
            assertThat(table.get(rollout(8).getRecordId())).isPresent();
        }
    }

    @Test
    void duplicateKeysKeepTheNewestRowAndTheBatchItselfIsUnchanged() {
        try (RolloutTable table = localTable("dedup", meters);
                GenerationBatch batch = table.generations().newBatch()) {
            batch.append(rollout(1), 0, 0, Instant.now());
            batch.append(rollout(2), 0, 1, Instant.now());
            Rollout newer = rollout(1);
            newer.setPolicyVersion(99L);
            batch.append(newer, 0, 2, Instant.now());
            SealedGeneration sealed = table.generations().write(TOPIC, 0, 0, 2, batch, 30, List.of());
            assertThat(sealed.rows()).isEqualTo(2);
            assertThat(batch.size())
                    .as("a failed write could be retried with the same batch")
                    .isEqualTo(3);
            assertThat(table.get(newer.getRecordId()).orElseThrow().rollout().getPolicyVersion())
                    .isEqualTo(99L);
            try (GenerationBatch withoutOffset1 = batch.without(Set.of(1L))) {
                assertThat(withoutOffset1.size()).isEqualTo(2);
            }
        }
    }
}
