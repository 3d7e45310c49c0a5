package dev.rolloutingest.table.generations;

import java.util.List;

/**
 * A shard's backlog as the table holds it: its merged watermark and the sealed generations above it.
 *
 * @param generations pending generations, ascending
 * @param oldestSealedAtMs when the oldest pending generation was sealed (epoch ms; 0 when none, or its seal is
 *     unreadable: it is due at once)
 * @param topic the input topic of the shard's pending generations (null when none is pending)
 * @param partition its input partition (-1 when none is pending)
 */
public record PendingShard(
        String shard, long watermark, List<Long> generations, long oldestSealedAtMs, String topic, int partition) {
    public int count() {
        return generations.size();
    }

    /** Age of the oldest pending generation in ms; 0 when none. */
    public long oldestAgeMs(long nowMs) {
        return generations.isEmpty() ? 0 : Math.max(0, nowMs - oldestSealedAtMs);
    }
}
