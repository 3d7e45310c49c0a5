package dev.rolloutingest.merge;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A table's shard this task merges (its GenerationSealed events come to this task's partition) and the highest
 * generation a committed GenerationsMerged event announced for it. Its backlog is not kept here: the table holds it
 * ({@link dev.rolloutingest.table.TableGenerations#backlog}). The record changes in the same exactly-once transaction as the
 * events, so a pass committed by a worker that died before its event is announced once, as RECONCILE.
 */
@JsonIgnoreProperties(ignoreUnknown = true) // records of older versions also held the pending generations
final class OwnedShard {
    private long announcedUpTo;

    @JsonCreator
    OwnedShard(@JsonProperty("announced_up_to") long announcedUpTo) {
        this.announcedUpTo = announcedUpTo;
    }

    static OwnedShard none() {
        return new OwnedShard(0);
    }

    @JsonProperty("announced_up_to")
    long announcedUpTo() {
        return announcedUpTo;
    }

    void announced(long watermark) {
        announcedUpTo = Math.max(announcedUpTo, watermark);
    }
}
