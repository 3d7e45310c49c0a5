package dev.rolloutingest.table;

import java.io.IOException;

/** Typed failures of the rollout table; each names the table and, where it applies, shard and generation. */
public class RolloutTableException extends RuntimeException {
    public RolloutTableException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * True when the error says the table's store failed (refused, unreachable, I/O), not that something in
     * the table is wrong: whoever hit it should retry later and blame nothing in the table for it.
     */
    public static boolean isStorageFailure(Throwable error) {
        if (isMissingFile(error)) {
            return false;
        }
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            if (e instanceof Unavailable
                    || e instanceof Contended
                    || e instanceof StorageAccess
                    || e instanceof IOException
                    || String.valueOf(e.getMessage()).contains("LanceError(IO)")) {
                return true;
            }
        }
        return false;
    }

    /**
     * True when the error says a file the table names is gone (a fragment or generation deleted by hand, a manifest
     * naming what is not there): the store answered, the table is broken. Retrying at once fails the same way, so the
     * failure counts towards a cooldown like any other fault of the table, never as an outage.
     */
    public static boolean isMissingFile(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            String message = String.valueOf(e.getMessage()).toLowerCase(java.util.Locale.ROOT);
            if (e instanceof java.io.FileNotFoundException
                    || e instanceof java.nio.file.NoSuchFileException
                    || message.contains("no such file")
                    || message.contains("notfound")
                    || message.contains("not found")) {
                return true;
            }
        }
        return false;
    }

    /** The URI holds no dataset, or one that is not a rollout table. */
    public static final class NotARolloutTable extends RolloutTableException {
        public NotARolloutTable(String tableUri, String why, Throwable cause) {
            super("Table " + tableUri + " is not a rollout table: " + why, cause);
        }
    }

    /** No table of that name in the catalog. */
    public static final class NoSuchTable extends RolloutTableException {
        public NoSuchTable(String rootUri, String name) {
            super("No table '" + name + "' under " + rootUri, null);
        }
    }

    /** A new table would exceed the catalog's cap on tables. */
    public static final class TableCap extends RolloutTableException {
        public TableCap(String rootUri, String name, int maxTables) {
            super(
                    "Table '" + name + "' would be one more than the " + maxTables + " tables " + rootUri
                            + " may hold (rollout.tables.max)",
                    null);
        }
    }

    /** The table's schema differs from the rollout schema. */
    public static final class SchemaMismatch extends RolloutTableException {
        public SchemaMismatch(String tableUri, String differences) {
            super("Table " + tableUri + " has a schema that differs from the rollout schema: " + differences, null);
        }
    }

    /** A generation path exists holding something other than what a replay would write. */
    public static final class GenerationConflict extends RolloutTableException {
        public GenerationConflict(String tableUri, String shard, long generation, String why) {
            super("Table " + tableUri + " shard " + shard + " generation " + generation + ": " + why, null);
        }
    }

    /** A sealed generation cannot be read (files gone, corrupt folder). */
    public static final class GenerationUnreadable extends RolloutTableException {
        private final String shard;
        private final long generation;

        public GenerationUnreadable(String tableUri, String shard, long generation, String folder, Throwable cause) {
            super(
                    "Table " + tableUri + " shard " + shard + " generation " + generation + " (folder " + folder
                            + ") cannot be read: " + (cause == null ? "missing" : cause.getMessage()),
                    cause);
            this.shard = shard;
            this.generation = generation;
        }

        public String shard() {
            return shard;
        }

        public long generation() {
            return generation;
        }
    }

    /** A read would open more pending generations than the hard cap allows. */
    public static final class PendingBacklogTooLarge extends RolloutTableException {
        private final String shard;
        private final int pending;
        private final int cap;
        private final String capKey;

        public PendingBacklogTooLarge(String tableUri, String shard, int pending, int cap, String capKey) {
            super(
                    "Table " + tableUri + " shard " + shard + " has " + pending
                            + " pending generations, over the read cap of " + cap + " (" + capKey
                            + "); merge the shard (POST /merge/" + shard + ") before reading",
                    null);
            this.shard = shard;
            this.pending = pending;
            this.cap = cap;
            this.capKey = capKey;
        }

        /** The setting that holds the cap. */
        public String capKey() {
            return capKey;
        }

        public String shard() {
            return shard;
        }

        public int pending() {
            return pending;
        }

        public int cap() {
            return cap;
        }
    }

    /** The object store refused or failed a request (credentials, bucket, network). */
    public static final class StorageAccess extends RolloutTableException {
        public StorageAccess(String tableUri, String what, Throwable cause) {
            super("Table " + tableUri + ": storage failed while " + what + ": " + cause.getMessage(), cause);
        }
    }

    /** A rollout holds a value the table cannot store (e.g. a timestamp outside its range): the record's fault. */
    public static final class Unrepresentable extends RolloutTableException {
        private final String recordId;
        private final long sourceOffset;
        private final String reason;

        public Unrepresentable(String recordId, long sourceOffset, String reason) {
            super("record_id " + recordId + " at offset " + sourceOffset + " cannot be stored: " + reason, null);
            this.recordId = recordId;
            this.sourceOffset = sourceOffset;
            this.reason = reason;
        }

        public String recordId() {
            return recordId;
        }

        public long sourceOffset() {
            return sourceOffset;
        }

        /** Why, without the table or record named. */
        public String reason() {
            return reason;
        }
    }

    /** The table as a whole cannot be read or written right now (object store down or refusing): retry later. */
    public static final class Unavailable extends RolloutTableException {
        public Unavailable(String tableUri, String what, Throwable cause) {
            super(
                    "Table " + tableUri + " is unavailable while " + what + ": "
                            + (cause == null ? "" : cause.getMessage()),
                    cause);
        }
    }

    /**
     * A commit refused again and again because other commits kept landing first: the table is busy, no shard is at
     * fault (it counts towards no cooldown); the work is retried whole.
     */
    public static final class Contended extends RolloutTableException {
        public Contended(String uri, String what) {
            super("Table " + uri + ": " + what, null);
        }
    }

    /**
     * A tail's cursor the table can no longer answer exactly (deletes dropped after it, or a cursor ahead of what the
     * table holds: the table was recreated or restored): the reader starts again from a scan, whose cursor it tails.
     */
    public static final class StaleCursor extends RolloutTableException {
        public StaleCursor(String tableUri, String why) {
            super(
                    "Table " + tableUri + ": the cursor is stale (" + why + "); read the table again with a scan and"
                            + " tail from the cursor it answers",
                    null);
        }
    }

    /** More scans or tails at once than the table serves ({@code rollout.scan.max.concurrent}): retry shortly. */
    public static final class Busy extends RolloutTableException {
        public Busy(String tableUri, String what) {
            super("Table " + tableUri + ": " + what, null);
        }
    }

    /** A scan or tail refused because reading the pending rows' keys would pass its memory bound. */
    public static final class TooManyPendingRows extends RolloutTableException {
        public TooManyPendingRows(String tableUri, long rows, long cap, String capKey) {
            super(
                    "Table " + tableUri + " has more than " + cap + " pending rows (" + capKey + "; read " + rows
                            + "): a scan or tail would hold their keys; retry once the merge-worker has caught up",
                    null);
        }
    }
}
