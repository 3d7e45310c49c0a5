package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.List;
import java.util.Map;

/**
 * Rows visible to readers (base + pending, de-duplicated, deletes applied): a key counts when its newest row, pending
 * or in the base, is not a delete. A full count: for tests and status.
 */
final class RowCounts {
    /** A row's key, what tells a delete row, and its order. */
    private static final List<String> KEY_AND_ORDER = List.of(
            RolloutSchema.RECORD_ID,
            RolloutSchema.EXPERIMENT,
            RolloutSchema.METADATA,
            RolloutSchema.SOURCE_PARTITION,
            RolloutSchema.SOURCE_OFFSET,
            RolloutSchema.INGESTED_AT);

    private final ReadCatalog catalog;
    private final PendingBacklog backlog;
    private final RowScans scans;
    private final PendingRows pendingRows;

    RowCounts(ReadCatalog catalog, PendingBacklog backlog, RowScans scans, PendingRows pendingRows) {
        this.catalog = catalog;
        this.backlog = backlog;
        this.scans = scans;
        this.pendingRows = pendingRows;
    }

    long countRows() {
        long[] baseOnly = {0};
        Map<String, RolloutRow> newest;
        try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
            backlog.observe(snapshot);
            newest = pendingRows.newestByKey(snapshot, KEY_AND_ORDER);
            scans.forEachRow(snapshot.base, null, KEY_AND_ORDER, row -> {
                RolloutRow pending = newest.get(row.recordId());
                if (pending == null) {
                    if (!row.isTombstone()) {
                        baseOnly[0]++;
                    }
                } else if (NewestWins.replaces(row, pending)) {
                    newest.put(row.recordId(), row); // a newer base row (a delete merged from another partition)
                }
                return true;
            });
            if (snapshot.deletes != null) {
                // a merged delete newer than a key's pending rows (from another partition) leaves the key out
                scans.forEachRow(snapshot.deletes, null, KEY_AND_ORDER, row -> {
                    RolloutRow pending = newest.get(row.recordId());
                    if (pending != null && NewestWins.replaces(row, pending)) {
                        newest.put(row.recordId(), row);
                    }
                    return true;
                });
            }
        }
        return newest.values().stream().filter(row -> !row.isTombstone()).count() + baseOnly[0];
    }
}
