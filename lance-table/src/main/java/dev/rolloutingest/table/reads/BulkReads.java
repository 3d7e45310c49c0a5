package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;

/**
 * Scans and tails for training: bulk Arrow reads of base + pending, newest value per key, and the rows that became
 * readable after a cursor. Both read one {@link ReadCatalog} snapshot (a base version and the pending generations it
 * has not merged), so merges, compaction and GC between two reads change neither answer: a row sits in the base or in
 * a pending generation, and its offset says whether a cursor has passed it.
 *
 * <p>A cursor's offsets per partition; its next cursor is the snapshot's head: per partition the last offset sealed
 * (the last pending generation's, else the merged watermark's). A tail hands over each key whose newest row (value or
 * delete) lies in (cursor, head], once; a key changed again later is handed over again by a later tail. Which offsets
 * those are, {@link CursorOffsets} tells; which scans read them, {@link PassPlanner}; the answer is a
 * {@link RowStream}.
 */
public final class BulkReads {
    private final LanceIo lance;
    private final ReadCatalog catalog;
    private final TableSettings settings;
    private final Semaphore running;
    private final CursorOffsets offsets;
    private final PassPlanner planner;

    public BulkReads(LanceIo lance, ReadCatalog catalog, ObjectStore store, TableSettings settings) {
        this.lance = lance;
        this.catalog = catalog;
        this.settings = settings;
        this.running = new Semaphore(settings.scanMaxConcurrent());
        ShardPartitions partitions = new ShardPartitions();
        this.offsets = new CursorOffsets(lance, store, partitions);
        this.planner = new PassPlanner(lance, partitions);
    }

    /** Every key's newest value (deletes hidden) in base + pending; its cursor is where a tail goes on from. */
    public RowStream scan(ScanQuery query, String topic) {
        return open(() -> {
            ReadCatalog.Snapshot snapshot = catalog.acquire();
            try {
                Schema schema = StreamSchema.of(snapshot.base, query.columns(), false);
                PendingKeys pending = pendingKeys(snapshot);
                Map<Integer, Long> head = offsets.head(snapshot, topic);
                String filter = PassPlanner.and(query.sqlFilter(), query.share().sql());
                List<StreamPass> passes = planner.scan(snapshot, filter, pending);
                return stream(
                        schema,
                        false,
                        passes,
                        pending,
                        snapshot.base,
                        snapshot.deletes,
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
                List<StreamPass> passes = planner.scanVersion(
                        version,
                        PassPlanner.and(query.sqlFilter(), query.share().sql()));
                return stream(
                        schema,
                        false,
                        passes,
                        PendingKeys.none(),
                        version,
                        null, // a base version alone: its tag holds live rows only
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
                // a share reads its partitions only: their values and deletes; its cursor moves on those alone
                head.keySet().removeIf(partition -> !query.share().holds(partition));
                CursorOffsets.Window window = CursorOffsets.window(from, head, span);
                TailCursor cursor = window.cursorAfter(from, topic);
                if (CursorOffsets.range(from, window.upTo()) == null) { // nothing new: no scan at all
                    return stream(
                            schema,
                            true,
                            List.of(),
                            PendingKeys.none(),
                            snapshot.base,
                            snapshot.deletes,
                            false,
                            query,
                            cursor,
                            window.more(),
                            snapshot);
                }
                PendingKeys pending = pendingKeys(snapshot);
                String filter = query.sqlFilter();
                // the base holds a partition's rows up to its merged watermark only: a cursor at or past it needs
                // no scan of the base (a tail that keeps up reads pending generations alone)
                String baseRange = CursorOffsets.range(from, offsets.merged(snapshot, topic, window.upTo()));
                List<StreamPass> passes =
                        planner.tail(snapshot, topic, from, window.upTo(), baseRange, filter, pending);
                return stream(
                        schema,
                        true,
                        passes,
                        pending,
                        snapshot.base,
                        snapshot.deletes,
                        true,
                        query,
                        cursor,
                        window.more(),
                        snapshot);
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
            Dataset deletes,
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
                deletes,
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
}
