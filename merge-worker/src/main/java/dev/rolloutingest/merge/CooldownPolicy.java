package dev.rolloutingest.merge;

import java.time.Duration;

/**
 * When a failing target cools down (seed #267): after {@code afterFailures} consecutive failures the
 * automatic triggers skip it for {@code base} seconds, doubling per further failure up to {@code max}.
 * Below the threshold a failure only counts. A success clears the record; manual runs are never gated.
 * 0 for the threshold or the base disables cooldowns (failures are still counted).
 */
public record CooldownPolicy(int afterFailures, long baseSecs, long maxSecs, Duration recordTtl) {

    public static CooldownPolicy from(MergeConfig config) {
        return new CooldownPolicy(
                config.cooldownAfterFailures(),
                config.cooldownBaseSecs(),
                config.cooldownMaxSecs(),
                config.cooldownRecordTtl());
    }

    public boolean enabled() {
        return afterFailures > 0 && baseSecs > 0;
    }

    /** The record after one more failure; its {@code untilMs} is set once the threshold is reached. */
    public Cooldown onFailure(Cooldown previous, String kind, String target, String error, long nowMs) {
        int failures = previous == null ? 1 : previous.failures() + 1;
        long until = 0;
        if (enabled() && failures >= afterFailures) {
            int doublings = Math.min(failures - afterFailures, 30);
            long secs = Math.min(maxSecs, baseSecs << doublings);
            if (secs < 0) {
                secs = maxSecs;
            }
            until = nowMs + secs * 1000;
        }
        return new Cooldown(kind, target, failures, until, error == null ? "" : error, nowMs);
    }

    /** Whether automatic triggers must skip the target now. */
    public boolean gates(Cooldown record, long nowMs) {
        return enabled() && record != null && record.activeAt(nowMs);
    }

    /** A record with no active cooldown and no failure for the TTL is dropped. */
    public boolean expired(Cooldown record, long nowMs) {
        return !record.activeAt(nowMs) && nowMs - record.lastFailureMs() > recordTtl.toMillis();
    }
}
