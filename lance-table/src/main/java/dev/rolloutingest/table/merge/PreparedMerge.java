package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.generations.SealedGeneration;
import java.time.Duration;
import java.util.List;

/** A shard's rows, read and de-duplicated, waiting for the commit. Closing frees them. */
public final class PreparedMerge implements AutoCloseable {
    private final MergePlan plan;
    private final MergeSource source;
    private final Duration read;

    PreparedMerge(MergePlan plan, MergeSource source, Duration read) {
        this.plan = plan;
        this.source = source;
        this.read = read;
    }

    public MergePlan plan() {
        return plan;
    }

    MergeSource source() {
        return source;
    }

    public int rows() {
        return source.rows();
    }

    public long memoryBytes() {
        return source.bytes();
    }

    MergeResult result(Duration commit) {
        List<Long> generations =
                plan.generations().stream().map(SealedGeneration::generation).toList();
        return new MergeResult(
                plan.shard(),
                generations,
                plan.watermark(),
                generations.get(generations.size() - 1),
                rows(),
                plan.bytes(),
                read,
                commit,
                plan.leftover());
    }

    @Override
    public void close() {
        source.close();
    }
}
