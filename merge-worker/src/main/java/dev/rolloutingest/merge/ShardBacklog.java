package dev.rolloutingest.merge;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A shard as the merge-worker knows it: pending generations (generation -> sealed-at, epoch ms) and the
 * highest generation a committed GenerationsMerged event announced. Both live in one store record, so they
 * change in the same exactly-once transaction as the events themselves.
 */
final class ShardBacklog {
    private final TreeMap<Long, Long> sealedAtByGeneration;
    private long announcedUpTo;

    @JsonCreator
    public ShardBacklog(
            @JsonProperty("pending") Map<Long, Long> pending, @JsonProperty("announced_up_to") long announcedUpTo) {
        this.sealedAtByGeneration = pending == null ? new TreeMap<>() : new TreeMap<>(pending);
        this.announcedUpTo = announcedUpTo;
    }

    public static ShardBacklog empty() {
        return new ShardBacklog(null, 0);
    }

    @JsonProperty("announced_up_to")
    public long announcedUpTo() {
        return announcedUpTo;
    }

    public void announced(long watermark) {
        announcedUpTo = Math.max(announcedUpTo, watermark);
    }

    /** Pending generations at or below {@code watermark} that no event announced: merged by a pass whose event was lost. */
    public List<Long> unannouncedUpTo(long watermark) {
        return sealedAtByGeneration.headMap(watermark, true).keySet().stream()
                .filter(g -> g > announcedUpTo)
                .toList();
    }

    @JsonProperty("pending")
    public Map<Long, Long> pending() {
        return sealedAtByGeneration;
    }

    public void add(long generation, long sealedAtMs) {
        sealedAtByGeneration.putIfAbsent(generation, sealedAtMs);
    }

    /** Drops everything at or below the watermark; returns how many were dropped. */
    public int mergedUpTo(long watermark) {
        int before = sealedAtByGeneration.size();
        sealedAtByGeneration.headMap(watermark, true).clear();
        return before - sealedAtByGeneration.size();
    }

    public int count() {
        return sealedAtByGeneration.size();
    }

    /** Age of the oldest pending generation in ms; 0 when none. */
    public long oldestAgeMs(long nowMs) {
        return sealedAtByGeneration.isEmpty()
                ? 0
                : Math.max(
                        0,
                        nowMs
                                - sealedAtByGeneration.values().stream()
                                        .mapToLong(Long::longValue)
                                        .min()
                                        .orElse(nowMs));
    }
}
