package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
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
import java.util.List;
import java.util.Optional;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;

/**
 * A key's value: its newest row of the base and the pending generations whose key filter may hold it. Its cost does
 * not grow with the backlog or the number of shards, and a broken generation fails only the lookups that need it.
 */
final class PointLookups {
    private final LanceIo lance;
    private final ReadCatalog catalog;
    private final PendingBacklog backlog;
    private final RowScans scans;
    private final Counter generationsOpened;
    private final Counter generationsSkipped;

    PointLookups(LanceIo lance, ReadCatalog catalog, PendingBacklog backlog, RowScans scans, MeterRegistry meters) {
        this.lance = lance;
        this.catalog = catalog;
        this.backlog = backlog;
        this.scans = scans;
        this.generationsOpened = Counter.builder("rollout.read.generations")
                .tag("result", "opened")
                .description("Pending generations a point lookup opened or skipped by their key filter")
                .register(meters);
        this.generationsSkipped = Counter.builder("rollout.read.generations")
                .tag("result", "skipped")
                .description("Pending generations a point lookup opened or skipped by their key filter")
                .register(meters);
    }

    /**
     * In each shard the newest pending generation whose filter may hold the key and that does hold it, then the base
     * through its index; the newest of those rows by {@link NewestWins} wins. Each generation holds a key at most once
     * (batches are de-duplicated before writing).
     *
     * <p>Why not lance's LsmScanner / LsmPointLookupPlanner: in 7.0.0 they open the generation datasets
     * without the table's storage options, so on S3 with an explicit endpoint or region they fail
     * ("Failed to resolve region for bucket"), and they open every generation.
     */
    Optional<RolloutRow> get(String recordId) {
        String filter = keyIs(recordId);
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
                        newest = NewestWins.winner(hit.get(), newest);
                        break; // one shard is one partition: its older generations hold older rows (NewestWins)
                    }
                }
            }
            Optional<RolloutRow> base = scans.lookUp(snapshot.base, filter);
            if (base.isPresent()) {
                newest = NewestWins.winner(base.get(), newest);
            }
            if (snapshot.mayBeDeleted(hash)) {
                // a merged delete hides the key's older values, pending ones of another partition included
                RolloutRow[] newestDelete = {null}; // a key deleted twice is kept beside the base twice
                scans.forEachRow(snapshot.deletes, filter, RolloutSchema.allColumns(), row -> {
                    newestDelete[0] = NewestWins.winner(row, newestDelete[0]);
                    return true;
                });
                if (newestDelete[0] != null) {
                    newest = NewestWins.winner(newestDelete[0], newest);
                }
            }
            // the newest row may be a delete: the key is gone
            List<String> added = AddedColumnReads.names(snapshot.base);
            return Optional.ofNullable(newest)
                    .filter(row -> !row.isTombstone())
                    .map(row -> AddedColumnReads.withNulls(row, added));
        }
    }

    /** A key's row in one base version alone (a snapshot: nothing pending counts, and the base holds no delete). */
    Optional<RolloutRow> getFromBase(Dataset base, String recordId) {
        return scans.lookUp(base, keyIs(recordId)).filter(row -> !row.isTombstone());
    }

    private static String keyIs(String recordId) {
        return RolloutSchema.RECORD_ID + " = " + Filters.string(recordId);
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
}
