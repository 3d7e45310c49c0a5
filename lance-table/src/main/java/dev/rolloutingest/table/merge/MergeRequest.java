package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.ShardId;

/**
 * A merge asked of a table ({@link TableMerges#request}): one bounded pass over a shard's oldest pending generations.
 *
 * @param upTo the highest generation the pass may take (unsigned; -1 = any): how a snapshot folds up to its cut
 * @param maxGenerations generations the pass takes at most (0 = unbounded; {@link #TABLE_LIMIT} = the table's
 *     {@code rollout.merge.max.generations})
 * @param maxBytes sealed bytes the pass takes at most, the oldest generation always (0 = unbounded; {@link
 *     #TABLE_LIMIT} = the table's {@code rollout.merge.max.bytes})
 */
public record MergeRequest(String shard, long upTo, int maxGenerations, long maxBytes) {
    /** A limit taken from the table's settings. */
    public static final int TABLE_LIMIT = -1;

    public MergeRequest {
        ShardId.requireValid(shard);
        if (maxGenerations < TABLE_LIMIT || maxBytes < TABLE_LIMIT) {
            throw new IllegalArgumentException(
                    "merge limits must be >= 0 (or the table's): " + maxGenerations + ", " + maxBytes);
        }
    }

    /** A pass over {@code shard} within the table's limits, up to its newest generation. */
    public static MergeRequest of(String shard) {
        return new MergeRequest(shard, -1L, TABLE_LIMIT, TABLE_LIMIT);
    }

    /** This pass taking no generation above {@code generation} (unsigned). */
    public MergeRequest upTo(long generation) {
        return new MergeRequest(shard, generation, maxGenerations, maxBytes);
    }

    /** This pass within other limits than the table's (0 = unbounded). */
    public MergeRequest limits(int generations, long bytes) {
        return new MergeRequest(shard, upTo, generations, bytes);
    }

    /** Whether the pass is bounded by a generation. */
    boolean bounded() {
        return upTo != -1L;
    }
}
