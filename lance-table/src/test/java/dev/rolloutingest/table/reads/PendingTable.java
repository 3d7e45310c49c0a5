package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.ObjectStores;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import org.apache.arrow.memory.RootAllocator;

/**
 * A fresh local table and the parts a {@link ReadCatalog} of its pending generations is built from, on an allocator
 * of its own (what the catalog keeps can be checked on it); the test writes the generations.
 */
final class PendingTable implements AutoCloseable {
    final RolloutTable table;
    final RootAllocator allocator = new RootAllocator();
    final ObjectStore store;
    final LanceIo lance;
    final GenerationCatalog generations;

    PendingTable(String name) {
        table = TableFixtures.localTable(name, new SimpleMeterRegistry());
        store = ObjectStores.open(table.location());
        lance = new LanceIo(table.location(), allocator, 1 << 20);
        generations = new GenerationCatalog(store, table.location().uri());
    }

    /** A catalog refreshed on every acquire, keeping up to 4 generations open within the given budgets. */
    ReadCatalog catalog(long keysBytes, long columnBytes) {
        return new ReadCatalog(lance, generations, Duration.ZERO, 4, keysBytes, columnBytes);
    }

    /** The one pending generation of partition 0 in the snapshot. */
    static ReadCatalog.Pending pendingOf(ReadCatalog.Snapshot snapshot) {
        List<ReadCatalog.Pending> shard = snapshot.pendingByShard.get(ShardId.of(TOPIC, 0));
        assertThat(shard).hasSize(1);
        return shard.get(0);
    }

    @Override
    public void close() throws Exception {
        try (table;
                allocator;
                store) {
            // closed in reverse: the store, the allocator, the table
        }
    }
}
