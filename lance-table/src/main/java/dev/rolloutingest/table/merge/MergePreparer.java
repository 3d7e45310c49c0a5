package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.storage.LanceIo;
import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * The slow, parallel step of a merge round: reads one shard's planned generations, ascending, newest row per key,
 * on any thread (memory: that shard's rows). Keys and provenance first; only what the commit cannot adopt whole
 * is read in full.
 */
final class MergePreparer {
    private final LanceIo lance;
    private final TableSettings settings;
    private final BaseKeys keys;
    private final MergeMeters meters;
    private final GenerationReads reads;

    MergePreparer(LanceIo lance, TableSettings settings, BaseKeys keys, MergeMeters meters) {
        this.lance = lance;
        this.settings = settings;
        this.keys = keys;
        this.meters = meters;
        this.reads = new GenerationReads(lance);
    }

    /**
     * A generation with at most 1/this of its keys maybe in the base is likely all new: 0.4 %, above the key
     * filter's false positives (0.1 % a layer). More, and they are likely real updates, so the generation is read
     * in full here, on the prepare threads, rather than on the commit thread (a 1 % mix read there doubled a round).
     */
    private static final int LIKELY_NEW_MAYBES = 250;

    /**
     * Reads a plan's generations, ascending, newest row per key; safe on any thread. Every generation's keys and
     * provenance are read first; a generation the merge will likely adopt whole (all its rows kept, its keys ruled
     * out by the committer's filter as it stands but for a few false positives) stays at that, the others are read in full. The commit reads in
     * full whatever it cannot adopt after all.
     */
    PreparedMerge prepare(MergePlan plan) {
        if (plan.failure() != null) {
            throw plan.failure();
        }
        long started = System.nanoTime();
        MergeSource source = new MergeSource();
        try {
            Set<SealedGeneration> byKeys = Collections.newSetFromMap(new IdentityHashMap<>());
            for (SealedGeneration generation : plan.generations()) {
                // only a generation the commit may adopt is worth reading by its keys alone first
                boolean mayAdopt = settings.mergeAppendNewKeys()
                        && settings.mergeAdoptGenerations()
                        && generation.rows() >= settings.mergeAdoptMinRows();
                if (mayAdopt) {
                    byKeys.add(generation);
                }
                reads.readGeneration(source, generation, mayAdopt ? GenerationReads.KEY_COLUMNS : null);
            }
            if (!byKeys.isEmpty()) {
                for (MergeSource.Span span : source.spans()) {
                    if (!byKeys.contains(span.generation())) {
                        continue; // read in full already
                    }
                    // a few maybes are the filter's false positives, which the commit checks exactly
                    if (span.fragment() != null
                            && !source.anyDropped(span)
                            && !source.mayHoldDeletes(span)
                            && source.hashes(span).stream()
                                            .filter(keys::mightHold)
                                            .count()
                                    <= span.rows() / LIKELY_NEW_MAYBES) {
                        source.keepKeysOnly(span);
                    } else {
                        reads.readFull(source, span);
                    }
                }
            }
            Duration read = Duration.ofNanos(System.nanoTime() - started);
            meters.readPhase.record(read);
            return new PreparedMerge(plan, source, read);
        } catch (Exception e) {
            source.close();
            throw LanceIo.unchecked(e);
        }
    }
}
