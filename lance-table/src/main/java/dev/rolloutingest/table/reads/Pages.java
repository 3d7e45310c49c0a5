package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.lance.Dataset;

/** Pages of rows, newest value per key ({@link NewestWins}), filtered and offset by a {@link ListQuery}. */
final class Pages {
    private final ReadCatalog catalog;
    private final TableSettings settings;
    private final PendingBacklog backlog;
    private final RowScans scans;
    private final PendingRows pendingRows;

    Pages(
            ReadCatalog catalog,
            TableSettings settings,
            PendingBacklog backlog,
            RowScans scans,
            PendingRows pendingRows) {
        this.catalog = catalog;
        this.settings = settings;
        this.backlog = backlog;
        this.scans = scans;
        this.pendingRows = pendingRows;
    }

    /**
     * A page of base + pending. The pending rows are read first and the newest per key kept; then the base is scanned
     * with the filter pushed down, and a base row shows unless a newer pending row replaces it; then the pending rows
     * that match, unless the base holds a newer row of their key (possible only across partitions), which one indexed
     * lookup of the page's keys tells. Filters apply after newest-wins, so a replaced row never matches.
     */
    List<RolloutRow> list(ListQuery query) {
        int limit = Math.min(query.limit(), settings.maxListLimit());
        List<String> columns = columns(query);
        Page page = new Page(query, limit);
        try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
            backlog.observe(snapshot);
            Map<String, RolloutRow> pending = pendingRows.newestByKey(snapshot, columns);
            Set<String> shownFromBase = new HashSet<>();
            scans.forEachRow(snapshot.base, query.baseFilter(), columns, row -> {
                RolloutRow replacement = pending.get(row.recordId());
                if (!row.isTombstone() && (replacement == null || !NewestWins.replaces(replacement, row))) {
                    page.offer(row);
                    shownFromBase.add(row.recordId());
                }
                return !page.full();
            });
            List<RolloutRow> candidates = new ArrayList<>();
            for (RolloutRow row : pending.values()) {
                if (candidates.size() >= limit + query.offset()) {
                    break;
                }
                if (!row.isTombstone() && !shownFromBase.contains(row.recordId()) && query.matches(row)) {
                    candidates.add(row);
                }
            }
            Set<String> newerInBase = newerInBase(snapshot.base, candidates);
            List<RolloutRow> maybeDeleted = candidates.stream()
                    .filter(row -> snapshot.mayBeDeleted(KeyFilter.hash(row.recordId())))
                    .toList();
            if (!maybeDeleted.isEmpty()) {
                newerInBase.addAll(newerInBase(snapshot.deletes, maybeDeleted)); // a merged delete hides older values
            }
            for (RolloutRow row : candidates) {
                if (page.full()) {
                    break;
                }
                if (!newerInBase.contains(row.recordId())) {
                    page.offer(row);
                }
            }
            List<String> added = AddedColumnReads.names(snapshot.base);
            return page.rows.stream()
                    .map(row -> AddedColumnReads.withNulls(row, added))
                    .toList();
        }
    }

    /** A page of one base version alone (a snapshot). */
    List<RolloutRow> listFromBase(Dataset base, ListQuery query) {
        int limit = Math.min(query.limit(), settings.maxListLimit());
        Page page = new Page(query, limit);
        scans.forEachRow(base, query.baseFilter(), columns(query), row -> {
            if (!row.isTombstone()) {
                page.offer(row);
            }
            return !page.full();
        });
        return page.rows;
    }

    private static List<String> columns(ListQuery query) {
        return query.includePayload() ? RolloutSchema.allColumns() : RolloutSchema.columnsWithoutPayload();
    }

    /**
     * Keys among the rows whose row in {@code base} (or in the deletes beside it) is newer (another partition's,
     * ingested later): indexed lookups.
     */
    private Set<String> newerInBase(Dataset base, List<RolloutRow> rows) {
        Set<String> newer = new HashSet<>();
        Map<String, RolloutRow> byKey = new HashMap<>();
        rows.forEach(r -> byKey.put(r.recordId(), r));
        List<String> keys = new ArrayList<>(byKey.keySet());
        List<String> provenance = List.of(
                RolloutSchema.RECORD_ID,
                RolloutSchema.SOURCE_PARTITION,
                RolloutSchema.SOURCE_OFFSET,
                RolloutSchema.INGESTED_AT);
        for (String in : Filters.recordIdIn(keys)) {
            scans.forEachRow(base, in, provenance, row -> {
                if (NewestWins.replaces(row, byKey.get(row.recordId()))) {
                    newer.add(row.recordId());
                }
                return true;
            });
        }
        return newer;
    }

    /** Collects a page: skips the query's offset of matching rows, then takes up to the limit. */
    private static final class Page {
        final List<RolloutRow> rows = new ArrayList<>();
        private final ListQuery query;
        private final int limit;
        private long skipped;

        Page(ListQuery query, int limit) {
            this.query = query;
            this.limit = limit;
        }

        void offer(RolloutRow row) {
            if (full() || !query.matches(row)) {
                return;
            }
            if (skipped < query.offset()) {
                skipped++;
                return;
            }
            rows.add(row);
        }

        boolean full() {
            return rows.size() >= limit;
        }
    }
}
