package dev.rolloutingest.table.rows;

import java.time.Instant;

/**
 * Which of two rows with the same record_id is the newer one, the same rule for reads and merges.
 *
 * <p>Within one partition the offset decides: Kafka's order is the producer's order. Rows of different
 * partitions (a record_id that moved when the topic's partition count grew) have no common offset; there
 * the later {@code ingested_at} wins (the wall clock of the ingest instance that accepted the row, which
 * follows the topic's order within a partition), and equal times fall to the higher partition so the
 * choice is the same everywhere.
 */
public final class RowOrder {
    private RowOrder() {}

    /** True when {@code candidate} replaces {@code current}. */
    public static boolean newer(
            int candidatePartition,
            long candidateOffset,
            Instant candidateIngestedAt,
            int currentPartition,
            long currentOffset,
            Instant currentIngestedAt) {
        if (candidatePartition == currentPartition) {
            return candidateOffset > currentOffset;
        }
        int byTime = candidateIngestedAt.compareTo(currentIngestedAt);
        return byTime != 0 ? byTime > 0 : candidatePartition > currentPartition;
    }

    public static boolean newer(RolloutRow candidate, RolloutRow current) {
        return newer(
                candidate.sourcePartition(),
                candidate.sourceOffset(),
                candidate.ingestedAt(),
                current.sourcePartition(),
                current.sourceOffset(),
                current.ingestedAt());
    }

    /**
     * The same rule as a merge-insert condition: a base row is replaced only by a newer source row, so merges
     * of different shards in any order leave the newest value.
     */
    static final String MERGE_CONDITION = "source." + RolloutSchema.SOURCE_PARTITION + " = target."
            + RolloutSchema.SOURCE_PARTITION
            + " AND source." + RolloutSchema.SOURCE_OFFSET + " > target." + RolloutSchema.SOURCE_OFFSET
            + " OR source." + RolloutSchema.SOURCE_PARTITION + " <> target." + RolloutSchema.SOURCE_PARTITION
            + " AND (source." + RolloutSchema.INGESTED_AT + " > target." + RolloutSchema.INGESTED_AT
            + " OR source." + RolloutSchema.INGESTED_AT + " = target." + RolloutSchema.INGESTED_AT
            + " AND source." + RolloutSchema.SOURCE_PARTITION + " > target." + RolloutSchema.SOURCE_PARTITION + ")";

    /**
     * A filter for the base rows a row of (partition, offset, ingestedAt) replaces, by the same rule: how a delete
     * removes only older values (a base row of another partition ingested later stays).
     */
    static String olderThan(int partition, long offset, Instant ingestedAt) {
        String at = "TIMESTAMP '" + ingestedAt + "'";
        return "(" + RolloutSchema.SOURCE_PARTITION + " = " + partition + " AND " + RolloutSchema.SOURCE_OFFSET + " < "
                + offset + " OR " + RolloutSchema.SOURCE_PARTITION + " <> " + partition + " AND ("
                + RolloutSchema.INGESTED_AT + " < " + at + " OR " + RolloutSchema.INGESTED_AT + " = " + at + " AND "
                + RolloutSchema.SOURCE_PARTITION + " < " + partition + "))";
    }
}
