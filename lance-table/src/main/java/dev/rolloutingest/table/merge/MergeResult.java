package dev.rolloutingest.table.merge;

import java.time.Duration;
import java.util.List;

/**
 * What one merge pass did.
 *
 * @param mergedGenerations ascending; empty when nothing was pending above the watermark
 * @param leftover pending generations the pass left for the next one (over the count or byte cap)
 */
public record MergeResult(
        String shard,
        List<Long> mergedGenerations,
        long previousWatermark,
        long newWatermark,
        long rows,
        long bytes,
        Duration readDuration,
        Duration commitDuration,
        int leftover) {

    public boolean mergedAnything() {
        return !mergedGenerations.isEmpty();
    }

    static MergeResult nothing(String shard, long watermark) {
        return new MergeResult(shard, List.of(), watermark, watermark, 0, 0, Duration.ZERO, Duration.ZERO, 0);
    }
}
