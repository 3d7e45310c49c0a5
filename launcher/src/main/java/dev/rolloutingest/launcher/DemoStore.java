package dev.rolloutingest.launcher;

import static dev.rolloutingest.launcher.DemoCommand.remember;
import static dev.rolloutingest.launcher.DemoCommand.say;

import dev.rolloutingest.embedded.EmbeddedAzurite;
import dev.rolloutingest.embedded.EmbeddedS3;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where the demo keeps its table, or its tables' root: on local disk, on the embedded S3 API (--s3) or on Azurite
 * (--azure). Named as the apps' settings, and as the {@code --storage} options the other commands take.
 */
final class DemoStore {
    private static final String STORAGE = "rollout.table.storage.";

    private DemoStore() {}

    /** Starts the store (remembered in {@code open}, to be closed) and returns the apps' settings of the table. */
    static Map<String, String> start(Path dir, boolean s3, boolean azure, boolean many, List<AutoCloseable> open) {
        Map<String, String> table = new HashMap<>();
        String where = many ? "rollout.tables.root" : "rollout.table.uri";
        String folder = many ? "tables" : "table";
        if (s3) {
            EmbeddedS3 store = remember(open, EmbeddedS3.start(dir.resolve("s3"), "rollouts"));
            table.put(where, store.uri(folder));
            store.lanceStorageOptions().forEach((k, v) -> table.put(STORAGE + k, v));
            say("%s on the S3 API at %s: %s", folder, store.endpoint(), store.uri(folder));
        } else if (azure) {
            say("starting Azurite (Azure Blob Storage emulator; installed from npm on first use) ...");
            EmbeddedAzurite store = remember(open, EmbeddedAzurite.start(dir.resolve("azure"), "rollouts"));
            table.put(where, store.uri(folder));
            store.lanceStorageOptions().forEach((k, v) -> table.put(STORAGE + k, v));
            say("%s on the Azure Blob API at %s: %s", folder, store.endpoint(), store.uri(folder));
        } else {
            table.put(where, dir.resolve(folder).toString());
            say("%s on local disk: %s", folder, dir.resolve(folder));
        }
        return table;
    }

    /** The store's options in the table's settings as the other commands take them: " --storage key=value" each. */
    static String storageArgs(Map<String, String> table) {
        StringBuilder storage = new StringBuilder();
        table.forEach((k, v) -> {
            if (k.startsWith(STORAGE)) {
                storage.append(" --storage ")
                        .append(k.substring(STORAGE.length()))
                        .append('=')
                        .append(v);
            }
        });
        return storage.toString();
    }
}
