package dev.rolloutingest.merge;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.merge.MergeResult;

/**
 * Where crash tests break the merge-worker on purpose: the seam they reach from test scope ({@code FaultyMergeApp}
 * builds the app with a variant that halts the JVM). Production runs {@link #NONE}.
 */
interface MergeFaults {
    MergeFaults NONE = new MergeFaults() {};

    /** A table this worker merges is opened, before its first pass. */
    default void tableOpened(RolloutTable table) {}

    /** A pass that merged something committed, before its outcome is queued for its task (and its event). */
    default void passCommitted(MergeResult result) {}
}
