package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.junit.jupiter.api.Test;

/**
 * Whole columns of a pending generation are read once and kept with its handle, row for row with its kept keys, and
 * only within their budget; an unfiltered scan copies a generation's rows from them instead of scanning it.
 */
class GenerationColumnsKeptTest {
    private static final List<String> COLUMNS = List.of(RolloutSchema.RECORD_ID, RolloutSchema.REWARD);

    @Test
    void aGenerationsColumnsAreReadOnceRowForRowAndKeptWithinTheBudget() throws Exception {
        try (PendingTable fixture = new PendingTable("generation-columns-kept")) {
            TableFixtures.write(fixture.table, 0, 0, 99, 100);
            try (ReadCatalog kept = fixture.catalog(1 << 20, 1 << 20);
                    ReadCatalog.Snapshot snapshot = kept.acquire()) {
                ReadCatalog.Pending pending = PendingTable.pendingOf(snapshot);
                long before = kept.residentBytes();
                Map<String, FieldVector> first;
                PendingKeys.GenerationRows rows;
                try (DatasetHandles.Lease lease = kept.generation(pending.listed())) {
                    first = lease.columns(COLUMNS);
                    rows = lease.rows();
                    assertThat(first).isNotNull().containsOnlyKeys(COLUMNS);
                    VarCharVector ids = (VarCharVector) first.get(RolloutSchema.RECORD_ID);
                    assertThat(ids.getValueCount()).isEqualTo(100);
                    for (int row = 0; row < rows.size(); row++) {
                        assertThat(ids.getObject(row).toString()).isEqualTo(rows.key(row));
                    }
                }
                try (DatasetHandles.Lease lease = kept.generation(pending.listed())) {
                    Map<String, FieldVector> again = lease.columns(COLUMNS);
                    assertThat(again.get(RolloutSchema.RECORD_ID))
                            .as("kept, not read again")
                            .isSameAs(first.get(RolloutSchema.RECORD_ID));
                }
                long columns = first.get(RolloutSchema.RECORD_ID).getBufferSize()
                        + first.get(RolloutSchema.REWARD).getBufferSize();
                assertThat(kept.columnBytes()).isEqualTo(columns);
                assertThat(kept.residentBytes() - before)
                        .as("counted in the catalog's resident memory, beside the rows' keys")
                        .isGreaterThanOrEqualTo(rows.bytes() + columns);
            }
            try (ReadCatalog tooSmall = fixture.catalog(1 << 20, 100);
                    ReadCatalog.Snapshot snapshot = tooSmall.acquire();
                    DatasetHandles.Lease lease =
                            tooSmall.generation(PendingTable.pendingOf(snapshot).listed())) {
                assertThat(lease.columns(COLUMNS))
                        .as("over the budget: not kept")
                        .isNull();
            }
        }
    }

    @Test
    void aColumnTheBudgetRefusesLeavesTheKeptOnesServing() throws Exception {
        try (PendingTable fixture = new PendingTable("generation-columns-refused")) {
            TableFixtures.write(fixture.table, 0, 0, 99, 100);
            long narrow;
            try (ReadCatalog measure = fixture.catalog(1 << 20, 1 << 20);
                    ReadCatalog.Snapshot snapshot = measure.acquire();
                    DatasetHandles.Lease lease =
                            measure.generation(PendingTable.pendingOf(snapshot).listed())) {
                assertThat(lease.columns(COLUMNS)).isNotNull();
                narrow = measure.columnBytes();
            }
            List<String> wide = List.of(RolloutSchema.RECORD_ID, RolloutSchema.REWARD, RolloutSchema.CONTENT);
            try (ReadCatalog catalog = fixture.catalog(1 << 20, narrow + 16);
                    ReadCatalog.Snapshot snapshot = catalog.acquire();
                    DatasetHandles.Lease lease =
                            catalog.generation(PendingTable.pendingOf(snapshot).listed())) {
                Map<String, FieldVector> kept = lease.columns(COLUMNS);
                assertThat(kept).as("the narrow columns fit").isNotNull();
                assertThat(lease.columns(wide)).as("content does not fit").isNull();
                assertThat(lease.columns(COLUMNS))
                        .as("the narrow columns still serve")
                        .isNotNull()
                        .containsEntry(RolloutSchema.RECORD_ID, kept.get(RolloutSchema.RECORD_ID));
                assertThat(catalog.columnBytes()).isEqualTo(narrow);
            }
        }
    }

    @Test
    void anUnfilteredScanCopiesPendingRowsFromTheKeptColumnsAndAFilteredOneScans() throws Exception {
        try (PendingTable fixture = new PendingTable("generation-columns-scan")) {
            TableFixtures.write(fixture.table, 0, 0, 99, 100);
            try (ReadCatalog catalog = fixture.catalog(1 << 20, 1 << 20)) {
                BulkReads reads = new BulkReads(fixture.lance, catalog, fixture.store, TableSettings.DEFAULTS);
                assertThat(rows(reads.scan(ScanQuery.all().withColumns(COLUMNS).withPolicyVersions(50L, null), TOPIC)))
                        .isEqualTo(50);
                assertThat(catalog.columnBytes()).as("a filtered pass scans").isZero();
                assertThat(rows(reads.scan(ScanQuery.all().withColumns(COLUMNS), TOPIC)))
                        .isEqualTo(100);
                assertThat(catalog.columnBytes())
                        .as("an unfiltered pass keeps the columns")
                        .isPositive();
                assertThat(rows(reads.scan(ScanQuery.all().withColumns(COLUMNS).withBatchRows(7), TOPIC), 7))
                        .isEqualTo(100);
                long kept = catalog.columnBytes();
                // merged: the next snapshot drops the generation's handle; a read still using it keeps its columns,
                // counted until it lets go and they are freed
                DatasetHandles.Lease reading;
                try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
                    reading =
                            catalog.generation(PendingTable.pendingOf(snapshot).listed());
                }
                try (reading) {
                    assertThat(reading.columns(COLUMNS)).isNotNull();
                    fixture.table
                            .merges()
                            .pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(100, Long.MAX_VALUE));
                    assertThat(rows(reads.scan(ScanQuery.all().withColumns(COLUMNS), TOPIC)))
                            .isEqualTo(100);
                    assertThat(catalog.columnBytes())
                            .as("dropped by the cache, still in use: counted")
                            .isEqualTo(kept);
                }
                assertThat(catalog.columnBytes())
                        .as("a merged generation's columns uncounted once freed")
                        .isZero();
                assertThat(fixture.allocator.getAllocatedMemory())
                        .as("and freed, the catalog still open")
                        .isZero();
            }
            assertThat(fixture.allocator.getAllocatedMemory())
                    .as("all freed with the catalog")
                    .isZero();
        }
    }

    private static long rows(RowStream stream) throws Exception {
        return rows(stream, 4096);
    }

    private static long rows(RowStream stream, int batchRows) throws Exception {
        long rows = 0;
        try (stream) {
            while (stream.loadNextBatch()) {
                assertThat(stream.getVectorSchemaRoot().getRowCount()).isLessThanOrEqualTo(batchRows);
                rows += stream.getVectorSchemaRoot().getRowCount();
            }
        }
        return rows;
    }
}
