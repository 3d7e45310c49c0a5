package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.generations.GenerationCatalog;

/**
 * One scan of a {@link RowStream}: of the base ({@code generation} null), of the deletes kept beside it ({@code
 * deletes}: read as the base is, and ordered against pending rows the same way), or of a pending generation (leased
 * while the pass runs). {@link BulkReads} plans a stream as a list of these; the stream runs them in order.
 */
record StreamPass(
        GenerationCatalog.Listed generation,
        String filter,
        Keep keep,
        boolean namesKeys,
        boolean onlyNewerInBase,
        boolean deletes) {
    StreamPass(GenerationCatalog.Listed generation, String filter, Keep keep) {
        this(generation, filter, keep, false, false, false);
    }

    StreamPass(GenerationCatalog.Listed generation, String filter, Keep keep, boolean namesKeys) {
        this(generation, filter, keep, namesKeys, false, false);
    }

    StreamPass(
            GenerationCatalog.Listed generation, String filter, Keep keep, boolean namesKeys, boolean onlyNewerInBase) {
        this(generation, filter, keep, namesKeys, onlyNewerInBase, false);
    }

    /** The same pass over the deletes kept beside the base. */
    StreamPass overDeletes() {
        return new StreamPass(null, filter, keep, namesKeys, onlyNewerInBase, true);
    }

    /** A pass over the base or the deletes beside it. */
    boolean base() {
        return generation == null;
    }

    /** Which rows of a pass are taken. */
    enum Keep {
        /** Every row the scan returns, as it is: its filter already left out deletes and replaced keys. */
        ALL,
        /**
         * Every base row the scan returns (its filter left out deletes) except those a newer pending row replaces,
         * told in Java by each row's key; a base row of a pending key is noted as {@link #MARK} notes it. The pass of
         * a scan without filters: it sees every base row, so no pass of the base rows of pending keys is needed. It
         * reads a row's partition and offset only (the ingest time, which orders rows of two partitions, is a costly
         * column to decode for every row): a key's base row of another partition than its newest pending row (a key
         * that moved across partitions, rare) is held back and its order taken by row id after the pass.
         */
        UNREPLACED,
        /**
         * None: the base rows of pending keys, their order columns only, to learn which are newer than the key's newest
         * pending row (a key that moved across partitions); a later pass ({@link StreamPass#onlyNewerInBase}) reads
         * those.
         */
        MARK,
        VALUES,
        DELETES,
        BOTH;

        boolean takes(boolean delete) {
            return this == BOTH || this == ALL || this == UNREPLACED || (this == DELETES) == delete;
        }
    }
}
