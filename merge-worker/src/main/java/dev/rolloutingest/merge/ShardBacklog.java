package dev.rolloutingest.merge;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Map;
import java.util.TreeMap;

/** A shard's pending generations as the merge-worker knows them: generation -> sealed-at (epoch ms). */
public final class ShardBacklog {
    private final TreeMap<Long, Long> sealedAtByGeneration;

    @JsonCreator
    public ShardBacklog(@JsonProperty("pending") Map<Long, Long> pending) {
        this.sealedAtByGeneration = pending == null ? new TreeMap<>() : new TreeMap<>(pending);
    }

    public static ShardBacklog empty() {
        return new ShardBacklog(null);
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
        return sealedAtByGeneration.isEmpty() ? 0
                : Math.max(0, nowMs - sealedAtByGeneration.values().stream().mapToLong(Long::longValue).min().orElse(nowMs));
    }
}
