package dev.rolloutingest.merge;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * Consecutive failures of one (kind, target), e.g. ("merge", shard) or ("compact", table URI).
 *
 * @param untilMs wall-clock end of the cooldown; 0 while the failures are below the threshold
 */
public record Cooldown(
        @JsonProperty("kind") String kind,
        @JsonProperty("target") String target,
        @JsonProperty("failures") int failures,
        @JsonProperty("until_ms") long untilMs,
        @JsonProperty("last_error") String lastError,
        @JsonProperty("last_failure_ms") long lastFailureMs) {

    public static String key(String kind, String target) {
        return kind + "|" + target;
    }

    public String key() {
        return key(kind, target);
    }

    public boolean activeAt(long nowMs) {
        return untilMs > nowMs;
    }
}
