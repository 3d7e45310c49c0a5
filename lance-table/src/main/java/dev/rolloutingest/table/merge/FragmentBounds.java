package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.storage.FencedCommit;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.lance.FragmentMetadata;
import org.lance.fragment.DeletionFile;

/**
 * The newest place in the order a base fragment's rows hold, per source partition: the highest offset and the latest
 * ingest time. A row that {@link NewestWins} ranks above both bounds of every partition of a fragment replaces any row
 * of it, so a merge that knows where a key's row sits (and that the row is live) needs not read the row's order
 * columns to replace it. Deletions only take rows away, so the bounds of a fragment hold for as long as it exists.
 */
record FragmentBounds(int[] partitions, long[] maxOffsets, long[] maxIngestedMicros) {

    /** True when a row at this place replaces every row of the fragment. */
    boolean olderThan(int partition, long offset, long ingestedMicros) {
        for (int i = 0; i < partitions.length; i++) {
            // within one partition the offsets decide, across two the ingest times: both grow monotonically with the
            // bound, so beating the bound beats every row under it
            if (!NewestWins.replaces(
                    partition, offset, ingestedMicros, partitions[i], maxOffsets[i], maxIngestedMicros[i])) {
                return false;
            }
        }
        return true;
    }

    /** Collects the bounds of one fragment's rows as they are read. */
    static final class Builder {
        private int[] partitions = new int[1];
        private long[] offsets = new long[1];
        private long[] ingested = new long[1];
        private int size;
        /** The partition of the last row, and where it sits in the arrays: rows of one partition come in runs. */
        private int lastPartition = Integer.MIN_VALUE;

        private int last = -1;

        void add(int partition, long offset, long ingestedMicros) {
            if (partition != lastPartition) {
                last = indexOf(partition);
                lastPartition = partition;
            }
            offsets[last] = Math.max(offsets[last], offset);
            ingested[last] = Math.max(ingested[last], ingestedMicros);
        }

        private int indexOf(int partition) {
            for (int i = 0; i < size; i++) {
                if (partitions[i] == partition) {
                    return i;
                }
            }
            if (size == partitions.length) {
                partitions = Arrays.copyOf(partitions, size * 2);
                offsets = Arrays.copyOf(offsets, size * 2);
                ingested = Arrays.copyOf(ingested, size * 2);
            }
            partitions[size] = partition;
            offsets[size] = Long.MIN_VALUE;
            ingested[size] = Long.MIN_VALUE;
            return size++;
        }

        FragmentBounds build() {
            return new FragmentBounds(
                    Arrays.copyOf(partitions, size), Arrays.copyOf(offsets, size), Arrays.copyOf(ingested, size));
        }
    }

    /** The bounds of each fragment whose rows are read, told apart by each row's address. */
    static final class PerFragment {
        private final Map<Integer, Builder> builders = new HashMap<>();
        /** Rows of one fragment come in runs: the builder of the last row's fragment. */
        private Builder last;

        private int lastFragment = -1;

        void add(long address, int partition, long offset, long ingestedMicros) {
            int fragment = (int) (address >>> 32);
            if (last == null || fragment != lastFragment) {
                lastFragment = fragment;
                last = builders.computeIfAbsent(fragment, f -> new Builder());
            }
            last.add(partition, offset, ingestedMicros);
        }

        /** The fragment's bounds; null when none of its rows was read (none live). */
        FragmentBounds of(int fragment) {
            Builder builder = builders.get(fragment);
            return builder == null ? null : builder.build();
        }
    }

    /**
     * Which fragment this is and which of its rows lance-core marks deleted: its first data file (a fragment id used
     * again, by a table made anew at the same place or an empty base's first commit, names other files) and the
     * deletion file that marks its deleted rows (a new one for every change, named by a random id and the version it
     * was read at). Equal states hold the same rows live.
     */
    record DeletionState(String dataFile, boolean any, long id, long readVersion) {
        static DeletionState of(FragmentMetadata fragment) {
            String first = FencedCommit.firstPath(fragment);
            DeletionFile file = fragment.getDeletionFile();
            return file == null
                    ? new DeletionState(first, false, 0, 0)
                    : new DeletionState(first, true, file.getId(), file.getReadVersion());
        }
    }
}
