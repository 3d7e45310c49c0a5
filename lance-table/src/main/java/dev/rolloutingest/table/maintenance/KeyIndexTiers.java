package dev.rolloutingest.table.maintenance;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * How the record_id index takes up new fragments without any take-up costing the whole table: size-tiered
 * segments under a cap, as Lucene's tiered merge policy keeps its segments.
 *
 * <ul>
 *   <li>New fragments get a segment of their own while fewer than {@code maxOpenSegments} segments are open.
 *   <li>A segment is open while it holds fewer than half of {@code maxSegmentRows}; a fuller one could not be
 *       merged with another of its size without passing the cap, so it is never rebuilt again (until a compaction
 *       rebuilds the whole index).
 *   <li>At {@code maxOpenSegments} open segments the new fragments are merged with the open segments, smallest
 *       first, as long as the merged segment stays within {@code maxSegmentRows}: a take-up re-indexes at most the
 *       cap, each row is re-indexed a few times over its life, and the index holds about {@code table rows /
 *       (cap / 2)} full segments plus at most {@code maxOpenSegments} open ones.
 * </ul>
 *
 * @param maxUnindexedRows rows the index may leave uncovered before a take-up ({@code 0} = whenever any are)
 * @param maxOpenSegments open segments at most before they are merged
 * @param maxSegmentRows rows one segment built by a take-up holds at most
 */
public record KeyIndexTiers(long maxUnindexedRows, int maxOpenSegments, long maxSegmentRows) {

    /** A segment of its own per take-up up to 8 open, none built above 2,000,000 rows. */
    public static final KeyIndexTiers DEFAULT = new KeyIndexTiers(0, 8, 2_000_000);

    public KeyIndexTiers {
        if (maxUnindexedRows < 0 || maxOpenSegments < 1 || maxSegmentRows < 1) {
            throw new IllegalArgumentException("maxUnindexedRows >= 0, maxOpenSegments >= 1 and maxSegmentRows >= 1: "
                    + maxUnindexedRows + ", " + maxOpenSegments + ", " + maxSegmentRows);
        }
    }

    /** Whether this many rows left uncovered call for a take-up. */
    boolean takeUp(long unindexedRows) {
        return unindexedRows > 0 && unindexedRows > maxUnindexedRows;
    }

    /** Whether a segment of this many rows may still be merged into a larger one. */
    boolean open(long segmentRows) {
        return segmentRows < maxSegmentRows / 2;
    }

    /**
     * The segments a take-up of {@code newRows} rows folds into its new segment (none: the new fragments get a
     * segment of their own).
     */
    <S> List<S> toMerge(List<S> segments, ToLongFunction<S> rowsOf, long newRows) {
        List<S> open = new ArrayList<>(
                segments.stream().filter(s -> open(rowsOf.applyAsLong(s))).toList());
        if (open.size() + 1 <= maxOpenSegments) {
            return List.of();
        }
        open.sort(Comparator.comparingLong(rowsOf));
        List<S> merged = new ArrayList<>();
        long rows = newRows;
        for (S segment : open) {
            long segmentRows = rowsOf.applyAsLong(segment);
            if (rows + segmentRows > maxSegmentRows) {
                break;
            }
            merged.add(segment);
            rows += segmentRows;
        }
        return merged;
    }
}
