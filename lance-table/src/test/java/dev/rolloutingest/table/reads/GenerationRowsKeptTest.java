package dev.rolloutingest.table.reads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.TableFixtures;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The keys, orders and delete marks of a pending generation's rows (what every scan and tail poll needs) are read
 * once and kept with the generation's handle, counted in the catalog's resident memory, and only within its budget;
 * a pass over the generation finds each row's by its address.
 */
class GenerationRowsKeptTest {
    @Test
    void aGenerationsRowsAreReadOnceAndKeptWithinTheBudget() throws Exception {
        try (PendingTable fixture = new PendingTable("generation-rows-kept")) {
            TableFixtures.write(fixture.table, 0, 0, 99, 100);
            try (ReadCatalog kept = fixture.catalog(1 << 20, 0);
                    ReadCatalog.Snapshot snapshot = kept.acquire()) {
                ReadCatalog.Pending pending = PendingTable.pendingOf(snapshot);
                PendingKeys.GenerationRows first;
                try (DatasetHandles.Lease lease = kept.generation(pending.listed())) {
                    first = lease.rows();
                }
                assertThat(first.size()).isEqualTo(100);
                for (int row = 0; row < first.size(); row++) {
                    assertThat(first.key(row))
                            .isEqualTo("exp-" + first.order(row).offset());
                }
                try (DatasetHandles.Lease lease = kept.generation(pending.listed())) {
                    assertThat(lease.rows()).as("kept, not read again").isSameAs(first);
                }
                assertThat(kept.residentBytes()).isGreaterThanOrEqualTo(first.bytes());
                PendingKeys keys = PendingKeys.read(kept, snapshot, 1_000, "t");
                assertThat(keys.newest(first.key(7))).isEqualTo(first.order(7));
                assertThat(PendingKeys.read(kept, snapshot, 1_000, "t"))
                        .as("merged once a snapshot")
                        .isSameAs(keys);
            }
            try (ReadCatalog tooSmall = fixture.catalog(100, 0);
                    ReadCatalog.Snapshot snapshot = tooSmall.acquire()) {
                ReadCatalog.Pending pending = PendingTable.pendingOf(snapshot);
                PendingKeys.GenerationRows first;
                try (DatasetHandles.Lease lease = tooSmall.generation(pending.listed())) {
                    first = lease.rows();
                }
                try (DatasetHandles.Lease lease = tooSmall.generation(pending.listed())) {
                    assertThat(lease.rows()).as("over the budget: not kept").isNotSameAs(first);
                }
                long filterOnly = tooSmall.residentBytes();
                assertThat(filterOnly).as("the seal's key filter only").isLessThan(first.bytes());
                // the merged keys outlive the evicted rows: counted for as long as the snapshot is current
                PendingKeys keys = PendingKeys.read(tooSmall, snapshot, 1_000, "t");
                assertThat(keys.bytes()).isGreaterThanOrEqualTo(100 * 64L);
                assertThat(tooSmall.residentBytes())
                        .as("the merged pending keys counted")
                        .isGreaterThanOrEqualTo(filterOnly + keys.bytes());
            }
            // a new seal: the catalog's next snapshot merges its keys too
            try (ReadCatalog kept = fixture.catalog(1 << 20, 0)) {
                try (ReadCatalog.Snapshot snapshot = kept.acquire()) {
                    assertThat(PendingKeys.read(kept, snapshot, 1_000, "t").newest("new"))
                            .isNull();
                }
                TableFixtures.write(
                        fixture.table,
                        0,
                        List.of(TableFixtures.put(new RolloutGenerator("exp", 8, 1), 0, 100, "new", 5)));
                try (ReadCatalog.Snapshot snapshot = kept.acquire()) {
                    assertThat(PendingKeys.read(kept, snapshot, 1_000, "t").newest("new"))
                            .isNotNull();
                }
            }
        }
    }

    @Test
    void aGenerationsRowsAreFoundByAddressWithTheirDeleteMarks() throws Exception {
        try (PendingTable fixture = new PendingTable("generation-rows-deletes")) {
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
            TableFixtures.write(
                    fixture.table,
                    0,
                    List.of(
                            TableFixtures.put(generator, 0, 0, "a", 10),
                            TableFixtures.delete(0, 1, "b", 11),
                            TableFixtures.put(generator, 0, 2, "c", 12)));
            try (ReadCatalog catalog = fixture.catalog(1 << 20, 0);
                    ReadCatalog.Snapshot snapshot = catalog.acquire();
                    DatasetHandles.Lease lease =
                            catalog.generation(PendingTable.pendingOf(snapshot).listed())) {
                PendingKeys.GenerationRows rows = lease.rows();
                Map<String, Boolean> deleteByKey = new HashMap<>();
                for (long address = 0; address < 3; address++) { // one fragment: addresses are row numbers
                    int row = rows.row(address);
                    deleteByKey.put(rows.key(row), rows.delete(row));
                }
                assertThat(deleteByKey).containsExactlyInAnyOrderEntriesOf(Map.of("a", false, "b", true, "c", false));
                assertThatThrownBy(() -> rows.row(3)).hasMessageContaining("no row at address 3");
            }
        }
    }
}
