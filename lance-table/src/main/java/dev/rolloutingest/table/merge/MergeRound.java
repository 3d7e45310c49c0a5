package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
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
 * #commit} (serial: {@link MergeCommitter}, its rows placed and committed by {@link RoundWrite}). This class holds the
 * plan and the types the three steps pass along.
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

    private final LanceIo lance;
    private final GenerationCatalog catalog;
    private final BaseKeys keys;
    private final KeyAddresses addresses;
    private final MergePreparer preparer;
    private final MergeCommitter committer;
    private final MergeMeters meters;

    public MergeRound(
            LanceIo lance, ObjectStore store, GenerationCatalog catalog, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.catalog = catalog;
        this.keys = new BaseKeys(lance, meters);
        this.addresses = new KeyAddresses(
                meters,
                settings.mergeKeyAddressesBytes(),
                settings.mergeKeyAddressesFileDir().resolve(KeyAddresses.folderOf(lance.location())),
                settings.mergeKeyAddressesFileMaxBytes(),
                lance::openBase);
        this.meters = new MergeMeters(meters);
        MergeMeters merges = this.meters;
        AdoptionRoom room = new AdoptionRoom(settings.mergeAdoptMaxBaseFragments());
        this.preparer = new MergePreparer(lance, store, settings, merges, room);
        // the deletes kept beside the base are few next to its rows: their filter starts small
        BaseKeys deletedKeys = new BaseKeys(lance, meters, BaseKeys.MIN_CAPACITY / 10);
        this.committer =
                new MergeCommitter(lance, store, catalog, settings, keys, addresses, deletedKeys, merges, room);
    }

    /**
     * What each shard would merge now: one base open for the watermarks, one listing for the seals, and
     * the seal files of the chosen generations.
     *
     * @param passes per shard its limits (0 = unbounded; the oldest pending generation is always taken) and the
     *     highest generation its plan may take (unsigned; -1 = any)
     */
    List<MergePlan> plan(List<MergeRequest> passes) {
        Map<String, Long> watermarks;
        Map<String, List<GenerationCatalog.Listed>> sealed;
        try (Dataset base = lance.openBase()) {
            watermarks = MemWalWatermarks.read(base);
            sealed = catalog.sealedByShard();
        } catch (Exception e) {
            throw new RolloutTableException.Unavailable(lance.location().uri(), "planning a merge", e);
        }
        List<MergePlan> plans = new ArrayList<>();
        for (MergeRequest pass : passes) {
            String shard = pass.shard();
            int maxGenerations = pass.maxGenerations();
            long maxBytes = pass.maxBytes();
            if (maxGenerations < 0 || maxBytes < 0) {
                throw new IllegalArgumentException("maxGenerations and maxBytes must be >= 0");
            }
            long watermark = watermarks.getOrDefault(shard, 0L);
            long bound = pass.upTo();
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
    public void injectCommitFault(Consumer<CommitStage> fault) {
        committer.injectCommitFault(fault);
    }

    MergeMeters meters() {
        return meters;
    }

    public LanceIo lance() {
        return lance;
    }

    /** The committer's filter of base keys (tests and benchmarks look at it). */
    public BaseKeys baseKeys() {
        return keys;
    }

    /** The committer's book of the newest keys' row addresses. */
    public KeyAddresses keyAddresses() {
        return addresses;
    }
}
