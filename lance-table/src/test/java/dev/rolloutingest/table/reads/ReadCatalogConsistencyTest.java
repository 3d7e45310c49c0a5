package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.ObjectStores;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/**
 * A reader's snapshot never loses a generation between its base and its pending list, however slowly it is taken:
 * here a merge of the generation and a GC without grace commit between the steps of one refresh (what a reader
 * stalled for longer than the grace meets), and the generation's rows are still in the snapshot, in one tier or the
 * other.
 */
class ReadCatalogConsistencyTest {
    @Test
    void aMergeAndGcDuringARefreshLeaveTheGenerationInTheBaseOrInThePendingList() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = TableFixtures.localTable("read-catalog-consistency", meters);
                RootAllocator allocator = new RootAllocator();
                ObjectStore store = ObjectStores.open(table.location())) {
            SealedGeneration first = TableFixtures.write(table, 0, 0, 9, 10);
            TableFixtures.write(table, 0, 10, 19, 10);
            String shard = ShardId.of(TOPIC, 0);
            AtomicBoolean mergeDuringListing = new AtomicBoolean(true);
            ObjectStore mergingWhileListed = new DelegatingStore(store) {
                @Override
                public List<String> listRecursive(String folder) {
                    if (mergeDuringListing.getAndSet(false)) {
                        table.merges().pass(MergeRequest.of(shard).limits(1, 0)); // the first generation only
                        assertThat(table.maintenance()
                                        .collectGarbage(Duration.ZERO)
                                        .deletedGenerations())
                                .isEqualTo(1);
                    }
                    return super.listRecursive(folder);
                }
            };
            LanceIo lance = new LanceIo(table.location(), allocator, 1 << 20);
            try (ReadCatalog catalog = new ReadCatalog(
                    lance,
                    new GenerationCatalog(mergingWhileListed, table.location().uri()),
                    Duration.ZERO,
                    4,
                    1 << 20)) {
                try (ReadCatalog.Snapshot snapshot = catalog.acquire()) {
                    assertThat(mergeDuringListing)
                            .as("the merge ran during the refresh")
                            .isFalse();
                    long watermark = snapshot.watermarks.getOrDefault(shard, 0L);
                    boolean pending = snapshot.pendingByShard.getOrDefault(shard, List.of()).stream()
                            .anyMatch(p -> p.listed().generation() == first.generation());
                    assertThat(watermark >= first.generation() || pending)
                            .as("generation %d is in the base (watermark %d) or pending", first.generation(), watermark)
                            .isTrue();
                }
            }
        }
    }

    /** An object store that passes every call on. */
    private static class DelegatingStore implements ObjectStore {
        private final ObjectStore store;

        DelegatingStore(ObjectStore store) {
            this.store = store;
        }

        @Override
        public List<Entry> list(String folder) {
            return store.list(folder);
        }

        @Override
        public List<String> listRecursive(String folder) {
            return store.listRecursive(folder);
        }

        @Override
        public void put(String path, byte[] bytes) {
            store.put(path, bytes);
        }

        @Override
        public byte[] get(String path) {
            return store.get(path);
        }

        @Override
        public void delete(String path) {
            store.delete(path);
        }

        @Override
        public void copy(String from, String to) {
            store.copy(from, to);
        }

        @Override
        public void close() {}
    }
}
