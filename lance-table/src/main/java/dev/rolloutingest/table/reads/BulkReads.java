package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Scans and tails for training: bulk Arrow reads of base + pending, newest value per key, and the rows that became
 * readable after a cursor. Both read one {@link ReadCatalog} snapshot (a base version and the pending generations it
 * has not merged), so merges, compaction and GC between two reads change neither answer: a row sits in the base or in
 * a pending generation, and its offset says whether a cursor has passed it.
 *
 * <p>A cursor's offsets per partition; its next cursor is the snapshot's head: per partition the last offset sealed
 * (the last pending generation's, else the merged watermark's). A tail hands over each key whose newest row (value or
 * delete) lies in (cursor, head], once; a key changed again later is handed over again by a later tail.
 */
public final class BulkReads {
    private static final Logger log = LoggerFactory.getLogger(BulkReads.class);

    private final LanceIo lance;
    private final ReadCatalog catalog;
    private final TableSettings settings;
    private final Semaphore running;
    private final ShardPartitions partitions = new ShardPartitions();
    private final CursorOffsets offsets;

    /** Per open base handle (one version), whether it may hold deletes; a newer version is a new handle. */
    private final Map<Dataset, Boolean> deletesByVersion =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());

    public BulkReads(LanceIo lance, ReadCatalog catalog, ObjectStore store, TableSettings settings) {
        this.lance = lance;
        this.catalog = catalog;
        this.settings = settings;
        this.running = new Semaphore(settings.scanMaxConcurrent());
        this.offsets = new CursorOffsets(lance, store, partitions);
    }

    /** Every key's newest value (deletes hidden) in base + pending; its cursor is where a tail goes on from. */
    public RowStream scan(ScanQuery query, String topic) {
        return open(() -> {
            ReadCatalog.Snapshot snapshot = catalog.acquire();
            try {
                Schema schema = StreamSchema.of(snapshot.base, query.columns(), false);
                PendingKeys pending = pendingKeys(snapshot);
                Map<Integer, Long> head = offsets.head(snapshot, topic);
                String filter = query.sqlFilter();
                List<StreamPass> passes = basePasses(snapshot.base, null, filter, pending, false);
                snapshot.pendingByShard
                        .values()
                        .forEach(shard -> shard.forEach(generation ->
                                passes.add(new StreamPass(generation.listed(), filter, StreamPass.Keep.VALUES))));
                return stream(
                        schema,
                        false,
                        passes,
                        pending,
                        snapshot.base,
                        filter != null,
                        query,
                        new TailCursor(TailCursor.tableId(lance.location().uri()), topic, head),
                        false,
                        snapshot);
            } catch (RuntimeException e) {
                snapshot.close();
                throw e;
            }
        });
    }

    /**
     * Every key's value in one base version alone (a snapshot: nothing pending counts), deletes hidden; its cursor is
     * what the version holds, so a tail from it hands over everything after the snapshot. Takes {@code version} over.
     */
    public RowStream scanVersion(Dataset version, ScanQuery query, String topic) {
        try {
            return open(() -> {
                Schema schema = StreamSchema.of(version, query.columns(), false);
                Map<Integer, Long> head = offsets.head(version, topic);
                String filter = query.sqlFilter();
                List<StreamPass> passes = basePasses(version, null, filter, PendingKeys.none(), false);
                return stream(
                        schema,
                        false,
                        passes,
                        PendingKeys.none(),
                        version,
                        false,
                        query,
                        new TailCursor(TailCursor.tableId(lance.location().uri()), topic, head),
                        false,
                        version);
            });
        } catch (RuntimeException e) {
            version.close();
            throw e;
        }
    }

    /**
     * The keys whose newest row (a value matching the query's filters, or a delete) has an offset after the cursor,
     * up to what is sealed and at most {@code maxOffsets} offsets of each partition further (0 = the table's setting).
     * Refuses a cursor of another table (a bad request), and one the table can no longer answer exactly
     * ({@link RolloutTableException.StaleCursor}).
     */
    public RowStream tail(TailCursor from, String topic, ScanQuery query, long maxOffsets) {
        from.requireOf(lance.location().uri(), topic);
        if (query.limit() != 0) {
            throw new IllegalArgumentException("a tail takes no row limit: it is bounded by offsets per partition");
        }
        if (maxOffsets < 0 || maxOffsets > settings.tailMaxOffsets()) {
            throw new IllegalArgumentException("offsets per partition must be between 1 and "
                    + settings.tailMaxOffsets() + " (" + TableSettings.TAIL_MAX_OFFSETS + "), was " + maxOffsets);
        }
        long span = maxOffsets == 0 ? settings.tailMaxOffsets() : maxOffsets;
        return open(() -> {
            ReadCatalog.Snapshot snapshot = catalog.acquire();
            try {
                Schema schema = StreamSchema.of(snapshot.base, query.columns(), true);
                offsets.requireOneTopic(snapshot, topic);
                Map<Integer, Long> head = offsets.head(snapshot, topic);
                offsets.refuseStale(from, head);
                CursorOffsets.Window window = CursorOffsets.window(from, head, span);
                Map<Integer, Long> upTo = window.upTo();
                boolean more = window.more();
                TailCursor cursor = window.cursorAfter(from, topic);
                if (CursorOffsets.range(from, upTo) == null) { // nothing new: no scan at all
                    return stream(
                            schema,
                            true,
                            List.of(),
                            PendingKeys.none(),
                            snapshot.base,
                            false,
                            query,
                            cursor,
                            more,
                            snapshot);
                }
                PendingKeys pending = pendingKeys(snapshot);
                String filter = query.sqlFilter();
                // the base holds a partition's rows up to its merged watermark only: a cursor at or past it needs
                // no scan of the base (a tail that keeps up reads pending generations alone)
                String baseRange = CursorOffsets.range(from, offsets.merged(snapshot, topic, upTo));
                List<StreamPass> passes = baseRange == null
                        ? new ArrayList<>()
                        : basePasses(snapshot.base, baseRange, filter, pending, true);
                addTailPending(passes, snapshot, topic, from, upTo, filter);
                return stream(schema, true, passes, pending, snapshot.base, true, query, cursor, more, snapshot);
            } catch (RuntimeException e) {
                snapshot.close();
                throw e;
            }
        });
    }

    private interface Opener {
        RowStream open();
    }

    /** Runs {@code opener} holding one of the concurrent reads, which the stream gives back when closed. */
    private RowStream open(Opener opener) {
        if (!running.tryAcquire()) {
            throw new RolloutTableException.Busy(
                    lance.location().uri(),
                    settings.scanMaxConcurrent() + " scans or tails are running (" + TableSettings.SCAN_MAX_CONCURRENT
                            + "); retry shortly");
        }
        try {
            return opener.open();
        } catch (RuntimeException e) {
            running.release();
            throw e;
        }
    }

    private RowStream stream(
            Schema schema,
            boolean tail,
            List<StreamPass> passes,
            PendingKeys pending,
            Dataset base,
            boolean lookUpUnseenKeys,
            ScanQuery query,
            TailCursor cursor,
            boolean more,
            AutoCloseable view) {
        if (query.limit() > settings.scanMaxLimit()) {
            throw new IllegalArgumentException("limit must be at most " + settings.scanMaxLimit() + " ("
                    + TableSettings.SCAN_MAX_LIMIT + "), was " + query.limit());
        }
        if (query.batchRows() > settings.scanBatchRows()) {
            throw new IllegalArgumentException("batch rows must be at most " + settings.scanBatchRows() + " ("
                    + TableSettings.SCAN_BATCH_ROWS + "), was " + query.batchRows());
        }
        int batchRows = query.batchRows() == 0 ? settings.scanBatchRows() : query.batchRows();
        BufferAllocator allocator = lance.allocator().newChildAllocator("rollout-scan", 0, Long.MAX_VALUE);
        return new RowStream(
                allocator,
                schema,
                tail,
                passes,
                catalog::generation,
                pending,
                base,
                lookUpUnseenKeys,
                query.limit(),
                batchRows,
                settings.scanReadaheadBatches(),
                cursor,
                more,
                List.of(view, running::release));
    }

    private PendingKeys pendingKeys(ReadCatalog.Snapshot snapshot) {
        return PendingKeys.read(
                catalog,
                snapshot,
                settings.scanPendingMaxRows(),
                lance.location().uri());
    }

    /** The most pending keys a filter names; past it every base row is checked in Java instead. */
    static final int KEYS_IN_FILTER_MAX = 100_000;

    /**
     * The passes over the base. A scan of every row (no filter, no range) reads each base row once in one pass and
     * drops, in Java, the few a newer pending row replaces: a 64-bit hash of each record_id against the pending keys'
     * (a filter naming the keys costs lance more to plan and evaluate than the check, and a second pass to read their
     * base rows). Otherwise the bulk pass is lance's alone: its filter leaves out the keys that have a pending row and
     * the rows that may be deletes, so its batches pass through as lance returns them, no row looked at; the base rows
     * of pending keys are read apart by their order columns only, to learn which are newer than the key's newest
     * pending row (a key that moved across partitions: rare), and those few then read whole. Either way the possible
     * deletes (a delete row has an empty experiment and rollout_id; a base version without such rows, known once per
     * version, needs no such term) are read in a pass where each row is checked. A tail hands deletes over whatever
     * the filters.
     */
    private List<StreamPass> basePasses(Dataset base, String range, String filter, PendingKeys pending, boolean tail) {
        List<StreamPass> passes = new ArrayList<>();
        if (range == null && filter == null && !tail && !pending.isEmpty()) {
            // a scan of every row: one pass sees each base row, and Java drops the replaced ones by key (a filter
            // naming the pending keys costs more to plan and evaluate, plus a second pass to read their base rows)
            String candidates = mayHoldDeletes(base) ? Tombstones.CANDIDATES : null;
            passes.add(new StreamPass(
                    null, candidates == null ? null : "NOT (" + candidates + ")", StreamPass.Keep.UNREPLACED));
            if (candidates != null) {
                checked(passes, candidates, null, false, false);
            }
            return passes;
        }
        if (pending.size() > KEYS_IN_FILTER_MAX) {
            checked(passes, range, filter, tail, false); // too many keys to name: one pass, every row checked
            return passes;
        }
        String pendingKeys = pending.isEmpty() ? null : Filters.recordIdInOneList(pending.keys());
        String candidates = mayHoldDeletes(base) ? Tombstones.CANDIDATES : null;
        String rest = candidates == null
                ? pendingKeys
                : pendingKeys == null ? candidates : "(" + candidates + ") OR (" + pendingKeys + ")";
        boolean namesKeys = pendingKeys != null;
        String notPending = pendingKeys == null ? null : "NOT (" + pendingKeys + ")";
        passes.add(new StreamPass(
                null,
                and(and(range, filter), rest == null ? null : "NOT (" + rest + ")"),
                StreamPass.Keep.ALL,
                namesKeys));
        if (candidates != null) {
            checked(passes, and(and(range, candidates), notPending), filter, tail, namesKeys);
        }
        if (pendingKeys != null) {
            // every base row of a pending key, whatever the range and filters: then no lookup is needed later
            passes.add(new StreamPass(null, pendingKeys, StreamPass.Keep.MARK, true));
            List<StreamPass> newer = new ArrayList<>();
            checked(newer, range, filter, tail, false);
            newer.forEach(pass -> passes.add(new StreamPass(null, pass.filter(), pass.keep(), false, true)));
        }
        return passes;
    }

    /** Whether the base version holds any row that may be a delete: one scan of two columns per version, kept. */
    private boolean mayHoldDeletes(Dataset base) {
        Boolean known = deletesByVersion.get(base);
        if (known != null) {
            return known;
        }
        boolean any;
        try (LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.RECORD_ID))
                        .filter(Tombstones.CANDIDATES)
                        .limit(1)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            any = false;
            while (!any && reader.loadNextBatch()) {
                any = reader.getVectorSchemaRoot().getRowCount() > 0;
            }
        } catch (Exception e) {
            throw new RolloutTableException("Table " + lance.location() + ": scan failed: " + e.getMessage(), e);
        }
        deletesByVersion.put(base, any);
        return any;
    }

    /** Passes over the base rows {@code where} selects, each row checked: values matching the filter, deletes. */
    private static void checked(List<StreamPass> passes, String where, String filter, boolean tail, boolean namesKeys) {
        if (!tail) {
            passes.add(new StreamPass(null, and(where, filter), StreamPass.Keep.VALUES, namesKeys));
        } else if (filter == null) {
            passes.add(new StreamPass(null, where, StreamPass.Keep.BOTH, namesKeys));
        } else {
            passes.add(new StreamPass(null, and(where, filter), StreamPass.Keep.VALUES, namesKeys));
            passes.add(new StreamPass(null, and(where, Tombstones.CANDIDATES), StreamPass.Keep.DELETES, namesKeys));
        }
    }

    /** The pending generations with offsets in (cursor, upTo] of their partition, filtered to that range. */
    private void addTailPending(
            List<StreamPass> passes,
            ReadCatalog.Snapshot snapshot,
            String topic,
            TailCursor from,
            Map<Integer, Long> upTo,
            String filter) {
        for (Map.Entry<String, List<ReadCatalog.Pending>> shard : snapshot.pendingByShard.entrySet()) {
            int partition = partitions.partition(topic, shard.getKey());
            if (partition < 0) {
                continue; // a shard of another topic: not this tail's
            }
            long after = from.offset(partition);
            long end = upTo.getOrDefault(partition, after);
            for (ReadCatalog.Pending generation : shard.getValue()) {
                GenerationCatalog.Listed listed = generation.listed();
                if (listed.lastOffset() <= after || listed.firstOffset() > end) {
                    continue;
                }
                String range = listed.firstOffset() > after && listed.lastOffset() <= end
                        ? null
                        : RolloutSchema.SOURCE_OFFSET + " > " + after + " AND " + RolloutSchema.SOURCE_OFFSET + " <= "
                                + end;
                if (filter == null) {
                    passes.add(new StreamPass(listed, range, StreamPass.Keep.BOTH));
                } else {
                    passes.add(new StreamPass(listed, and(range, filter), StreamPass.Keep.VALUES));
                    passes.add(new StreamPass(listed, and(range, Tombstones.CANDIDATES), StreamPass.Keep.DELETES));
                }
            }
        }
    }

    private static String and(String a, String b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : a + " AND (" + b + ")";
    }
}
