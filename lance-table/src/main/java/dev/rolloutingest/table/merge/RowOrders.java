package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.rows.NewestWins;
import java.util.Arrays;

/**
 * Where each row of a {@link MergeSource} sits in {@link NewestWins}'s order (partition, offset, ingest time), by
 * ordinal in primitive arrays: a merge holds millions of rows and compares them without a row object each.
 */
final class RowOrders {
    private int[] partitions = new int[1024];
    private long[] offsets = new long[1024];
    private long[] ingestedMicros = new long[1024];

    /** Records the row at {@code ordinal}, the next one after those recorded. */
    void add(int ordinal, int partition, long offset, long ingested) {
        if (ordinal == partitions.length) {
            partitions = Arrays.copyOf(partitions, ordinal * 2);
            offsets = Arrays.copyOf(offsets, ordinal * 2);
            ingestedMicros = Arrays.copyOf(ingestedMicros, ordinal * 2);
        }
        partitions[ordinal] = partition;
        offsets[ordinal] = offset;
        ingestedMicros[ordinal] = ingested;
    }

    int partition(int ordinal) {
        return partitions[ordinal];
    }

    long offset(int ordinal) {
        return offsets[ordinal];
    }

    long ingestedMicros(int ordinal) {
        return ingestedMicros[ordinal];
    }

    /** True when row {@code i} of {@code a} replaces row {@code j} of {@code b}. */
    static boolean replaces(RowOrders a, int i, RowOrders b, int j) {
        return NewestWins.replaces(
                a.partitions[i], a.offsets[i], a.ingestedMicros[i], b.partitions[j], b.offsets[j], b.ingestedMicros[j]);
    }
}
