package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.TableLocation;
import java.util.Arrays;
import java.util.Map;

/**
 * A JVM of its own that works the Azure store with no credential in its options, so the default Azure chain must
 * find one in this process's environment (which a test sets, as Azure sets it for an app). Prints what it did;
 * exits 1 on any failure.
 */
public final class AzureStoreProbe {
    private AzureStoreProbe() {}

    public static void main(String[] args) {
        String endpoint = args[0];
        String uri = args[1];
        Map<String, String> options =
                Map.of("azure_storage_account_name", "devstoreaccount1", "azure_endpoint", endpoint);
        try (ObjectStore store = ObjectStores.open(new TableLocation(uri, options))) {
            store.put("_seals/shard/1.json", new byte[] {1, 2});
            store.copy("_seals/shard/1.json", "data/copied");
            byte[] read = store.get("data/copied");
            System.out.println("listed " + store.list("_seals/shard"));
            store.delete("_seals/shard/1.json");
            System.out.println("probe read " + Arrays.toString(read) + ", left " + store.listRecursive(""));
        } catch (RuntimeException e) {
            e.printStackTrace(System.out);
            System.exit(1);
        }
        System.exit(0);
    }
}
