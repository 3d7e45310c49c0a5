package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.generations.SealedGeneration;
import java.util.List;

/**
 * What a shard would merge: the generations above its watermark it takes this round.
 *
 * @param failure why the shard cannot be planned (an unreadable seal), or null
 */
public record MergePlan(
        String shard,
        long watermark,
        List<SealedGeneration> generations,
        long bytes,
        int leftover,
        RuntimeException failure) {}
