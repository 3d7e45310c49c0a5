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
}
