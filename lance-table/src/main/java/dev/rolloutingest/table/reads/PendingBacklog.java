package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.storage.LanceIo;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The guard every get, list and count passes before it reads: each shard's pending count sampled into
 * {@code rollout_wal_pending_generations}, a warning once per shard per read at the warn threshold, and a fast failure
 * above the hard cap (list reads open every pending generation, and a backlog of thousands exhausts memory).
 */
final class PendingBacklog {
    private static final Logger log = LoggerFactory.getLogger(PendingBacklog.class);

    private final LanceIo lance;
    private final TableSettings settings;
    private final DistributionSummary pendingPerShard;
    private final Counter backlogWarnings;
    private final Counter backlogRejections;

    PendingBacklog(LanceIo lance, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.settings = settings;
        // Count buckets 8..4096; no shard label (cardinality), one sample per shard per read.
        this.pendingPerShard = DistributionSummary.builder("rollout.wal.pending.generations")
                .description("Pending (unmerged) generations per shard, sampled on every read")
                .serviceLevelObjectives(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
                .register(meters);
        this.backlogWarnings = Counter.builder("rollout.wal.pending.warnings")
                .description("Reads that found a shard at or over the pending warn threshold")
                .register(meters);
        this.backlogRejections = Counter.builder("rollout.wal.pending.rejections")
                .description("Reads refused because a shard was over the pending hard cap")
                .register(meters);
    }

    /** Samples and checks every shard's pending count: what each read does before it reads. */
    void observe(ReadCatalog.Snapshot snapshot) {
        snapshot.pendingByShard.forEach((shard, pending) -> observe(shard, pending.size()));
    }

    private void observe(String shard, int pending) {
        pendingPerShard.record(pending);
        if (settings.pendingWarnGenerations() > 0 && pending >= settings.pendingWarnGenerations()) {
            backlogWarnings.increment();
            log.warn(
                    "Table {} shard {} has {} pending generations (warn at {}, {}): list reads open all of them;"
                            + " check the merge-worker",
                    lance.location(),
                    shard,
                    pending,
                    settings.pendingWarnGenerations(),
                    TableSettings.PENDING_WARN_KEY);
        }
        if (settings.pendingMaxGenerations() > 0 && pending > settings.pendingMaxGenerations()) {
            backlogRejections.increment();
            throw new RolloutTableException.PendingBacklogTooLarge(
                    lance.location().uri(),
                    shard,
                    pending,
                    settings.pendingMaxGenerations(),
                    TableSettings.PENDING_MAX_KEY);
        }
    }
}
