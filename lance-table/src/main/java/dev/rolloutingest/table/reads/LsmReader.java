package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.storage.LanceIo;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.Optional;
import org.lance.Dataset;

/**
 * get and list over the base table plus every shard's pending generations, newest wins (by {@link NewestWins}).
 *
 * <p>Reads work on a {@link ReadCatalog} snapshot: no listing, manifest or seal is read per request. A point
 * lookup ({@link PointLookups}) opens only the pending generations whose key filter may hold the key (per shard newest
 * first, up to the first hit), then looks the key up in the base through its scalar index; so its cost does not grow
 * with the backlog or the number of shards, and a broken generation fails only the lookups that need it. Pages
 * ({@link Pages}) and counts ({@link RowCounts}) hold the base against every key's newest pending row.
 *
 * <p>Every read first passes the {@link PendingBacklog} guard: each shard's pending count sampled, a warning at the
 * warn threshold, a fast failure above the hard cap. Reads never wait on a merge.
 */
public final class LsmReader {
    private final PointLookups lookups;
    private final Pages pages;
    private final RowCounts counts;

    public LsmReader(LanceIo lance, ReadCatalog catalog, TableSettings settings, MeterRegistry meters) {
        PendingBacklog backlog = new PendingBacklog(lance, settings, meters);
        RowScans scans = new RowScans(lance, catalog);
        PendingRows pendingRows = new PendingRows(scans);
        this.lookups = new PointLookups(lance, catalog, backlog, scans, meters);
        this.pages = new Pages(catalog, settings, backlog, scans, pendingRows);
        this.counts = new RowCounts(catalog, backlog, scans, pendingRows);
    }

    /** A key's newest value in base + pending; none when its newest row is a delete. */
    public Optional<RolloutRow> get(String recordId) {
        return lookups.get(recordId);
    }

    /** A page of rows, newest value per key. */
    public List<RolloutRow> list(ListQuery query) {
        return pages.list(query);
    }

    /** A key's row in one base version alone (a snapshot: nothing pending counts); a delete reads as absent. */
    public Optional<RolloutRow> getFromBase(Dataset base, String recordId) {
        return lookups.getFromBase(base, recordId);
    }

    /** A page of one base version alone (a snapshot). */
    public List<RolloutRow> listFromBase(Dataset base, ListQuery query) {
        return pages.listFromBase(base, query);
    }

    /** Rows visible to readers: keys whose newest row, pending or in the base, is not a delete. */
    public long countRows() {
        return counts.countRows();
    }
}
