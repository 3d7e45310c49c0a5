package dev.rolloutingest.ingest;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.TopicPartition;

/**
 * What /health needs to see a partition that cannot seal: since when each partition of this instance holds
 * unsealed records, and the last seal error. Kept across task restarts in this process (a replaced stream
 * thread re-creates the task, and the re-read records are as old as before), cleared by a successful seal.
 */
final class IngestHealth {
    private record Partition(long unsealedSinceMs, String lastError, long lastErrorAtMs) {}

    private final Map<TopicPartition, Partition> partitions = new ConcurrentHashMap<>();

    /** The partition buffers records since {@code sinceMs} unless it already did since earlier; returns the earlier. */
    long buffering(TopicPartition partition, long sinceMs) {
        Partition now = partitions.compute(
                partition,
                (p, old) -> old == null
                        ? new Partition(sinceMs, null, 0)
                        : old.unsealedSinceMs() > 0
                                ? old
                                : new Partition(sinceMs, old.lastError(), old.lastErrorAtMs()));
        return now.unsealedSinceMs();
    }

    void sealed(TopicPartition partition) {
        partitions.remove(partition);
    }

    /**
     * The partition's task closed: on a rebalance its records are someone else's now, so forget it, unless
     * its seals were failing (then the thread died of it and the next incarnation's age must count from
     * when the records first waited).
     */
    void closed(TopicPartition partition) {
        partitions.computeIfPresent(partition, (p, state) -> state.lastError() == null ? null : state);
    }

    void sealFailed(TopicPartition partition, String error, long atMs) {
        partitions.compute(partition, (p, old) -> new Partition(old == null ? 0 : old.unsealedSinceMs(), error, atMs));
    }

    /**
     * Partitions of this instance holding unsealed records for longer than {@code boundMs}, each described
     * with its age and last error; empty when all are fine.
     *
     * @param assigned input partitions of this instance's active tasks
     * @param settled whether the app is RUNNING (no rebalance under way)
     */
    public List<String> stuck(Set<TopicPartition> assigned, boolean settled, long nowMs, long boundMs) {
        List<String> problems = new ArrayList<>();
        partitions.forEach((partition, state) -> {
            // A partition whose thread died of its seal errors waits for reassignment: until the group settles
            // it counts, once the group settled without it here, it is someone else's.
            boolean ours = assigned.contains(partition) || (!settled && state.lastError() != null);
            if (ours && state.unsealedSinceMs() > 0 && nowMs - state.unsealedSinceMs() > boundMs) {
                problems.add("topic " + partition.topic() + " partition " + partition.partition()
                        + " has held unsealed records for "
                        + (nowMs - state.unsealedSinceMs()) / 1000
                        + " s (bound " + boundMs / 1000 + " s)"
                        + (state.lastError() == null
                                ? ""
                                : "; last seal error at " + Instant.ofEpochMilli(state.lastErrorAtMs()) + ": "
                                        + state.lastError()));
            }
        });
        problems.sort(null);
        return problems;
    }
}
