package dev.rolloutingest.table.merge;

import java.time.Duration;
import java.util.Map;

/**
 * One round's outcome: each shard's result (an empty one when it had nothing or was merged meanwhile) or
 * error, and how many commits it took (1 when no shard failed).
 */
public record RoundResult(
        Map<String, MergeResult> merged, Map<String, RuntimeException> failed, int commits, Duration duration) {}
