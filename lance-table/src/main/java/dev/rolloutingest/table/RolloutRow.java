package dev.rolloutingest.table;

import dev.rolloutingest.schemas.Rollout;
import java.time.Instant;

/** One row of the table: the rollout plus where it came from in Kafka and when it was ingested. */
public record RolloutRow(Rollout rollout, int sourcePartition, long sourceOffset, Instant ingestedAt) {
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
