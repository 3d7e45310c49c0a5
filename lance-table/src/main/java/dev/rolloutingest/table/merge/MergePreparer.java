package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
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
    private final AdoptionRoom room;
    private final MergeMeters meters;
    private final GenerationReads reads;

    MergePreparer(LanceIo lance, ObjectStore store, TableSettings settings, MergeMeters meters, AdoptionRoom room) {
        this.lance = lance;
        this.room = room;
        this.settings = settings;
        this.meters = meters;
        this.reads = new GenerationReads(lance, store);
    }

    /**
     * Reads a plan's generations, ascending, newest row per key; safe on any thread. Every generation's keys and
     * provenance are read first; a generation the merge will likely adopt whole (no row of it dropped within the round,
     * no delete in it) stays at that, the others are read in full. The commit reads in full whatever it cannot adopt
     * after all.
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
                        && generation.rows() >= settings.mergeAdoptMinRows()
                        && room.left();
                if (mayAdopt) {
                    byKeys.add(generation);
                }
                if (mayAdopt) {
                    reads.readKeys(source, generation);
                } else {
                    reads.readGeneration(source, generation, null);
                }
            }
            if (!byKeys.isEmpty()) {
                for (MergeSource.Span span : source.spans()) {
                    if (!byKeys.contains(span.generation())) {
                        continue; // read in full already
                    }
                    // new keys and newer values of base keys alike go in whole; a row older than the base's of
                    // its key (a round redone) is found at the commit, which then reads the generation in full
                    if (span.fragment() != null && !source.anyDropped(span) && !source.mayHoldDeletes(span)) {
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
