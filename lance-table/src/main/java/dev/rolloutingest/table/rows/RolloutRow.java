package dev.rolloutingest.table.rows;

import dev.rolloutingest.schemas.Rollout;
import java.time.Instant;
import java.util.Map;

/**
 * One row of the table: the rollout, where it came from in Kafka and when it was ingested, and the values of the
 * columns producers added beyond the contract (by name; null where the row has none, e.g. written before).
 */
public record RolloutRow(
        Rollout rollout, int sourcePartition, long sourceOffset, Instant ingestedAt, Map<String, Object> added) {
    /** A row of the contract's columns alone. */
    public RolloutRow(Rollout rollout, int sourcePartition, long sourceOffset, Instant ingestedAt) {
        this(rollout, sourcePartition, sourceOffset, ingestedAt, Map.of());
    }

    public String recordId() {
        return rollout.getRecordId();
    }

    /** A delete of its record_id ({@link Tombstones}), not a value. */
    public boolean isTombstone() {
        return Tombstones.is(rollout);
    }

    /** Bytes of the inline payload, 0 when absent. */
    public int payloadBytes() {
        return rollout.getBinaryPayload() == null
                ? 0
                : rollout.getBinaryPayload().remaining();
    }
}
