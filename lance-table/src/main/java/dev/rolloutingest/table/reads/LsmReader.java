package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;

/**
 * get and list over the base table plus every shard's pending generations, newest wins (by {@link NewestWins}).
 *
 * <p>Reads work on a {@link ReadCatalog} snapshot: no listing, manifest or seal is read per request. A point
 * lookup opens only the pending generations whose key filter may hold the key (per shard newest first, up
 * to the first hit), then looks the key up in the base through its scalar index; so its cost does not grow
 * with the backlog or the number of shards, and a broken generation fails only the lookups that need it.
 *
 * <p>Every read first passes the {@link PendingBacklog} guard: each shard's pending count sampled, a warning at the
 * warn threshold, a fast failure above the hard cap. Reads never wait on a merge.
 *
 * <p>Over 300 lines because get, list and count are one algorithm (newest wins across pending generations and the
 * base) over the same scans.
 */
public final class LsmReader {
    private final LanceIo lance;
    private final ReadCatalog catalog;
    private final TableSettings settings;
    private final PendingBacklog backlog;
    private final RowScans scans;
    private final Counter generationsOpened;
    private final Counter generationsSkipped;

    public LsmReader(LanceIo lance, ReadCatalog catalog, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.catalog = catalog;
        this.settings = settings;
        this.backlog = new PendingBacklog(lance, settings, meters);
        this.scans = new RowScans(lance, catalog);
        this.generationsOpened = Counter.builder("rollout.read.generations")
                .tag("result", "opened")
                .description("Pending generations a point lookup opened or skipped by their key filter")
                .register(meters);
        this.generationsSkipped = Counter.builder("rollout.read.generations")
                .tag("result", "skipped")
                .description("Pending generations a point lookup opened or skipped by their key filter")
                .register(meters);
    }

    /** Pending generations of every shard, newest first within a shard, shards in order. */
    private static List<ReadCatalog.Pending> newestFirst(ReadCatalog.Snapshot snapshot) {
        List<ReadCatalog.Pending> all = new ArrayList<>();
        snapshot.pendingByShard.values().forEach(shard -> {
            for (int i = shard.size() - 1; i >= 0; i--) {
                all.add(shard.get(i));
            }
        });
        return all;
    }

    /**
     * Point lookup: in each shard the newest pending generation whose filter may hold the key and that does
     * hold it, then the base through its index; the newest of those rows by {@link NewestWins} wins. Each
     * generation holds a key at most once (batches are de-duplicated before writing).
     *
     * <p>Why not lance's LsmScanner / LsmPointLookupPlanner: in 7.0.0 they open the generation datasets
     * without the table's storage options, so on S3 with an explicit endpoint or region they fail
     * ("Failed to resolve region for bucket"), and they open every generation.
     */
    public Optional<RolloutRow> get(String recordId) {
        String filter = RolloutSchema.RECORD_ID + " = " + Filters.string(recordId);
        KeyFilter.Hash hash = KeyFilter.hash(recordId);
        try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
            backlog.observe(snapshot);
            RolloutRow newest = null;
            for (List<ReadCatalog.Pending> shard : snapshot.pendingByShard.values()) {
                for (int i = shard.size() - 1; i >= 0; i--) {
                    ReadCatalog.Pending generation = shard.get(i);
                    if (generation.filter() != null && !generation.filter().mightContain(hash)) {
                        generationsSkipped.increment();
                        continue;
                    }
                    generationsOpened.increment();
                    Optional<RolloutRow> hit = lookUp(generation.listed(), recordId, hash);
                    if (hit.isPresent()) {
                        newest = winner(hit.get(), newest);
                        break; // one shard is one partition: its older generations hold older rows (NewestWins)
                    }
                }
            }
            Optional<RolloutRow> base = scans.lookUp(snapshot.base, filter);
            if (base.isPresent()) {
                newest = winner(base.get(), newest);
            }
            // the newest row may be a delete: the key is gone
            List<String> added = AddedColumnReads.names(snapshot.base);
            return Optional.ofNullable(newest)
                    .filter(row -> !row.isTombstone())
                    .map(row -> AddedColumnReads.withNulls(row, added));
        }
    }

    /**
     * The key's row in one generation: its key positions (loaded once per generation) say which row, if any,
     * and that one row is taken; a key the filter let through by chance costs a binary search.
     */
    private Optional<RolloutRow> lookUp(GenerationCatalog.Listed generation, String recordId, KeyFilter.Hash hash) {
        try (DatasetHandles.Lease lease = catalog.generation(generation)) {
            for (long row : lease.keys().rowsOf(hash)) {
                try (ArrowReader reader = lease.dataset()
                        .take(List.of(row), AddedColumnReads.withAdded(lease.dataset(), RolloutSchema.allColumns()))) {
                    while (reader.loadNextBatch()) {
                        VectorSchemaRoot root = reader.getVectorSchemaRoot();
                        for (int i = 0; i < root.getRowCount(); i++) {
                            RolloutRow found = ArrowRows.read(root, i);
                            if (found.recordId().equals(recordId)) {
                                return Optional.of(found);
                            }
                        }
                    }
                }
            }
            return Optional.empty();
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException.GenerationUnreadable(
                    lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
        }
    }

    /** The one of the two that wins; {@code current} null: none yet. */
    private static RolloutRow winner(RolloutRow candidate, RolloutRow current) {
        return current == null || NewestWins.replaces(candidate, current) ? candidate : current;
    }

    /**
     * A page of rows, newest value per key. The pending rows are read first and the newest per key kept
     * (memory: the pending rows, bounded by the pending hard cap); then the base is scanned with the filter
     * pushed down, and a base row shows unless a newer pending row replaces it; then the pending rows that
     * match, unless the base holds a newer row of their key (possible only across partitions), which one
     * indexed lookup of the page's keys tells. Filters apply after newest-wins, so a replaced row never matches.
     */
    public List<RolloutRow> list(ListQuery query) {
        int limit = Math.min(query.limit(), settings.maxListLimit());
        List<String> columns =
                query.includePayload() ? RolloutSchema.allColumns() : RolloutSchema.columnsWithoutPayload();
        Page page = new Page(query, limit);
        try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
            backlog.observe(snapshot);
            Map<String, RolloutRow> pending = newestPending(snapshot, columns);
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

    /** A key's row in one base version alone (a snapshot: nothing pending counts); a delete reads as absent. */
    public Optional<RolloutRow> getFromBase(Dataset base, String recordId) {
        String filter = RolloutSchema.RECORD_ID + " = " + Filters.string(recordId);
        return scans.lookUp(base, filter).filter(row -> !row.isTombstone());
    }

    /** A page of one base version alone (a snapshot). */
    public List<RolloutRow> listFromBase(Dataset base, ListQuery query) {
        int limit = Math.min(query.limit(), settings.maxListLimit());
        List<String> columns =
                query.includePayload() ? RolloutSchema.allColumns() : RolloutSchema.columnsWithoutPayload();
        Page page = new Page(query, limit);
        scans.forEachRow(base, query.baseFilter(), columns, row -> {
            if (!row.isTombstone()) {
                page.offer(row);
            }
            return !page.full();
        });
        return page.rows;
    }

    /** Keys among the rows whose base row is newer (another partition's, ingested later): indexed lookups. */
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

    /** The newest pending row per key, pending generations read newest first. */
    private Map<String, RolloutRow> newestPending(ReadCatalog.Snapshot snapshot, List<String> columns) {
        Map<String, RolloutRow> newest = new LinkedHashMap<>();
        for (ReadCatalog.Pending generation : newestFirst(snapshot)) {
            scans.forEachRow(generation.listed(), null, columns, row -> {
                newest.merge(
                        row.recordId(),
                        row,
                        (current, candidate) -> NewestWins.replaces(candidate, current) ? candidate : current);
                return true;
            });
        }
        return newest;
    }

    /**
     * Rows visible to readers (base + pending, de-duplicated, deletes applied): a key counts when its newest row, pending
     * or in the base, is not a delete. A full count: for tests and status.
     */
    public long countRows() {
        List<String> keyAndOrder = List.of(
                RolloutSchema.RECORD_ID,
                RolloutSchema.EXPERIMENT,
                RolloutSchema.METADATA,
                RolloutSchema.SOURCE_PARTITION,
                RolloutSchema.SOURCE_OFFSET,
                RolloutSchema.INGESTED_AT);
        Map<String, RolloutRow> pending = new HashMap<>();
        long[] baseOnly = {0};
        try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
            backlog.observe(snapshot);
            for (ReadCatalog.Pending generation : newestFirst(snapshot)) {
                scans.forEachRow(generation.listed(), null, keyAndOrder, row -> {
                    pending.merge(row.recordId(), row, (a, b) -> NewestWins.replaces(b, a) ? b : a);
                    return true;
                });
            }
            scans.forEachRow(snapshot.base, null, keyAndOrder, row -> {
                RolloutRow newest = pending.get(row.recordId());
                if (newest == null) {
                    if (!row.isTombstone()) {
                        baseOnly[0]++;
                    }
                } else if (NewestWins.replaces(row, newest)) {
                    pending.put(row.recordId(), row); // a newer base row (a delete merged from another partition)
                }
                return true;
            });
        }
        return pending.values().stream().filter(row -> !row.isTombstone()).count() + baseOnly[0];
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
