package dev.rolloutingest.table.rows;

/**
 * Which row of a record_id wins: the one rule of point reads and lists, scans and tails, and merges. A key's newest
 * row is its value; when that row is a delete ({@link Tombstones}) the key is gone.
 *
 * <ul>
 *   <li>Rows of one partition: the higher offset wins. Kafka's order is the producer's; the ingest time is the clock
 *       of whichever instance held the partition, and may go back.
 *   <li>Rows of two partitions (a record_id written to several: keyless records, a grown partition count) share no
 *       offset: the later {@code ingested_at} wins, and at the same microsecond the higher partition, so every path
 *       picks the same row.
 *   <li>A row never replaces one at its own partition and offset (the same record of the log, e.g. the copy a merge
 *       committed while its generation still reads as pending): whichever row the caller holds stays.
 *   <li>Where a row sits does not count: the base is rows like any other. One shard's generations hold one partition's
 *       offsets ascending, so a newer generation's row of a key replaces an older one's.
 *   <li>A delete is ordered like a value: it hides older values, a newer value hides it. So a merge keeps it in the
 *       base, where a value older than it that merges later loses to it, until no older value can still arrive
 *       ({@code TableMaintenance.dropDeletes}).
 * </ul>
 *
 * <p>Asked with primitive values, so no path copies a row or allocates to ask: ingest times in microseconds, as the
 * {@code ingested_at} column holds them.
 */
public final class NewestWins {
    private NewestWins() {}

    /** Where a row sits in the order. */
    public record Order(int partition, long offset, long ingestedMicros) {
        /** True when this row replaces {@code current}. */
        public boolean replaces(Order current) {
            return NewestWins.replaces(
                    partition, offset, ingestedMicros, current.partition, current.offset, current.ingestedMicros);
        }

        /** The same record of the log: its partition and offset (whatever the ingest time). */
        public boolean sameRow(Order other) {
            return partition == other.partition && offset == other.offset;
        }
    }

    /** True when {@code candidate} replaces {@code current}. */
    public static boolean replaces(
            int candidatePartition,
            long candidateOffset,
            long candidateIngestedMicros,
            int currentPartition,
            long currentOffset,
            long currentIngestedMicros) {
        if (offsetsDecide(candidatePartition, currentPartition)) {
            return replacesInPartition(candidateOffset, currentOffset);
        }
        if (candidateIngestedMicros != currentIngestedMicros) {
            return candidateIngestedMicros > currentIngestedMicros;
        }
        return candidatePartition > currentPartition;
    }

    public static boolean replaces(RolloutRow candidate, RolloutRow current) {
        return replaces(
                candidate.sourcePartition(),
                candidate.sourceOffset(),
                Timestamps.micros(candidate.ingestedAt()),
                current.sourcePartition(),
                current.sourceOffset(),
                Timestamps.micros(current.ingestedAt()));
    }

    /** The one of the two rows that wins; {@code current} null: none yet. */
    public static RolloutRow winner(RolloutRow candidate, RolloutRow current) {
        return current == null || replaces(candidate, current) ? candidate : current;
    }

    /**
     * Whether partitions and offsets alone order two rows: rows of one partition. Rows of two partitions need their
     * ingest times, which a caller may read only then.
     */
    public static boolean offsetsDecide(int candidatePartition, int currentPartition) {
        return candidatePartition == currentPartition;
    }

    /** Of two rows of one partition ({@link #offsetsDecide}), true when {@code candidateOffset}'s replaces the other. */
    public static boolean replacesInPartition(long candidateOffset, long currentOffset) {
        return candidateOffset > currentOffset;
    }
}
