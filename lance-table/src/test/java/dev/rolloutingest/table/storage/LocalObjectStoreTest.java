package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** Listing a local table while another process writes it. */
class LocalObjectStoreTest {
    @Test
    void aListingSkipsPutsInProgressAndEntriesThatGoWhileItLists() throws Exception {
        Path dir = TableFixtures.freshDir("local-store");
        try (ObjectStore store = ObjectStores.open(TableLocation.local(dir))) {
            store.put("_seals/s/a.json", new byte[] {1});
            Files.write(dir.resolve("_seals/s/b.json" + LocalObjectStore.TMP_SUFFIX + "42"), new byte[] {2});
            assertThat(store.listRecursive("_seals")).containsExactly("s/a.json");

            AtomicBoolean writing = new AtomicBoolean(true);
            Thread writer = new Thread(() -> {
                for (int i = 0; writing.get(); i++) {
                    store.put("_seals/s/g" + (i % 50) + ".json", new byte[64]);
                    if (i % 7 == 0) {
                        store.delete("_seals/s/g" + ((i + 25) % 50) + ".json");
                    }
                }
            });
            writer.start();
            try {
                for (int i = 0; i < 2_000; i++) {
                    assertThat(store.listRecursive("_seals")).allMatch(name -> !name.contains(".tmp-"));
                }
            } finally {
                writing.set(false);
                writer.join();
            }
        }
    }
}
