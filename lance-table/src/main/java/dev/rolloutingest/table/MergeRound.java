package dev.rolloutingest.table;

import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Merging in rounds: the pending generations of many shards folded into the base in one merge-insert
 * commit that marks all of them merged. Three steps, so the caller can run the slow part in parallel and
 * the commit alone: {@link #plan} (one look at the watermarks and the seals), {@link #prepare} (read and
 * de-duplicate one shard's generations; any thread, memory = that shard's rows: {@link MergePreparer}), {@link
 * #commit} (serial: {@link MergeCommitter}, its new keys appended by {@link RoundAppend}, its deletes applied by
 * {@link RoundDeletes}). This class holds the plan and the types the three steps pass along.
 *
 * <p>Per shard the guarantees of a single pass hold: at most N consecutive generations above its watermark,
 * ascending, within a byte budget (the oldest always, so a large one cannot block its shard); the
 * watermark is read again right before the commit and a shard whose watermark moved since its plan
 * (another committer merged it) is left out, so nothing is merged twice or out of order (lance-core 7.0.0
 * accepts both silently and then overwrites newer data). A commit that fails is split in halves down to the
 * shard at fault, so one poisoned shard never fails the healthy ones; when the table itself cannot be read,
 * every shard of the round fails as unavailable instead.
 */
public final class MergeRound {
    private static final Logger log = LoggerFactory.getLogger(MergeRound.class);

    /**
     * Where a merged row went: appended as a new key (written again), adopted with its whole generation (its data
     * files linked, not written), joined (written in place of an older base row of its key), or superseded (the base
     * already held its key as new or newer: a round redone after a crash, or a newer value of another partition
     * merged first).
     */
    public enum Path {
        APPEND,
        ADOPT,
        JOIN,
        SUPERSEDED
    }

    /** The points of a commit a test can fail at, as a crash there would. */
    public enum CommitStage {
        /** The group's watermarks are checked and its rows split; its data is not committed yet. */
        CHECKED,
        /** The new keys are appended; the merge-insert with the marks has not run. */
        APPENDED,
        /** The merge-insert with the marks committed. */
        MARKED
    }

    private final LanceIo lance;
    private final GenerationCatalog catalog;
    private final BaseKeys keys;
    private final MergePreparer preparer;
    private final MergeCommitter committer;

    MergeRound(
            LanceIo lance, ObjectStore store, GenerationCatalog catalog, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.catalog = catalog;
        this.keys = new BaseKeys(lance, meters);
        MergeMeters merges = new MergeMeters(meters);
        this.preparer = new MergePreparer(lance, settings, keys, merges);
        this.committer = new MergeCommitter(lance, store, settings, keys, merges, preparer);
    }

    /**
     * What each shard would merge now: one base open for the watermarks, one listing for the seals, and
     * the seal files of the chosen generations.
     *
     * @param maxGenerations per shard, 0 = unbounded
     * @param maxBytes per shard, 0 = unbounded (the oldest pending generation is always taken)
     * @param upTo per shard, the highest generation its plan may take (unsigned; absent or -1 = any)
     */
    List<MergePlan> plan(Collection<String> shards, int maxGenerations, long maxBytes, Map<String, Long> upTo) {
        if (maxGenerations < 0 || maxBytes < 0) {
            throw new IllegalArgumentException("maxGenerations and maxBytes must be >= 0");
        }
        Map<String, Long> watermarks;
        Map<String, List<GenerationCatalog.Listed>> sealed;
        try (Dataset base = lance.openBase()) {
            watermarks = MemWalWatermarks.read(base);
            sealed = catalog.sealedByShard();
        } catch (Exception e) {
            throw new RolloutTableException.Unavailable(lance.location().uri(), "planning a merge", e);
        }
        List<MergePlan> plans = new ArrayList<>();
        for (String shard : shards) {
            ShardId.requireValid(shard);
            long watermark = watermarks.getOrDefault(shard, 0L);
            long bound = upTo.getOrDefault(shard, -1L);
            List<GenerationCatalog.Listed> pending = sealed.getOrDefault(shard, List.of()).stream()
                    .filter(g -> Long.compareUnsigned(g.generation(), watermark) > 0)
                    .toList();
            int beyondBound = (int) pending.stream()
                    .filter(g -> Long.compareUnsigned(g.generation(), bound) > 0)
                    .count();
            pending = pending.subList(0, pending.size() - beyondBound); // ascending: those beyond come last
            List<SealedGeneration> chosen = new ArrayList<>();
            long bytes = 0;
            RuntimeException failure = null;
            for (GenerationCatalog.Listed listed : pending) {
                if (maxGenerations > 0 && chosen.size() >= maxGenerations) {
                    break;
                }
                SealedGeneration seal;
                try {
                    seal = catalog.seal(listed);
                } catch (RuntimeException e) {
                    failure = e; // this shard's seal is unreadable: its problem, not the round's
                    break;
                }
                if (!chosen.isEmpty() && maxBytes > 0 && bytes + seal.bytes() > maxBytes) {
                    break;
                }
                chosen.add(seal);
                bytes += seal.bytes();
            }
            plans.add(new MergePlan(
                    shard, watermark, chosen, bytes, pending.size() + beyondBound - chosen.size(), failure));
        }
        return plans;
    }

    /**
     * Reads a plan's generations, ascending, newest row per key; safe on any thread (see {@link MergePreparer}).
     */
    PreparedMerge prepare(MergePlan plan) {
        return preparer.prepare(plan);
    }

    /**
     * Commits the prepared shards, as one merge-insert when it can (see {@link MergeCommitter}). Returns each
     * shard's result or error; closes the prepared merges.
     */
    RoundResult commit(List<PreparedMerge> prepared) {
        return committer.commit(prepared);
    }

    /** Fails the next commits at a stage, as a crash there would (tests only); null restores. */
    void injectCommitFault(Consumer<CommitStage> fault) {
        committer.injectCommitFault(fault);
    }

    LanceIo lance() {
        return lance;
    }

    /** The committer's filter of base keys (tests and benchmarks look at it). */
    BaseKeys baseKeys() {
        return keys;
    }

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

    /** A shard's rows, read and de-duplicated, waiting for the commit. Closing frees them. */
    public static final class PreparedMerge implements AutoCloseable {
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
            List<Long> generations = plan.generations().stream()
                    .map(SealedGeneration::generation)
                    .toList();
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

    /**
     * One round's outcome: each shard's result (an empty one when it had nothing or was merged meanwhile) or
     * error, and how many commits it took (1 when no shard failed).
     */
    public record RoundResult(
            Map<String, MergeResult> merged, Map<String, RuntimeException> failed, int commits, Duration duration) {}
}
