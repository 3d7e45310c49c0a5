package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.table.TableLocation;
import java.util.HashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** --table and --storage k=v, shared by the read commands; storage also from ROLLOUT_TABLE_STORAGE_* env vars. */
final class TableOptions {
    @Option(names = "--table", required = true, description = "Table URI: a local path or s3://bucket/prefix")
    String table;

    @Option(names = "--storage", description = "Lance storage option, repeatable: aws_endpoint=http://...")
    Map<String, String> storage = new HashMap<>();

    TableLocation location() {
        Map<String, String> options = new HashMap<>(ConfigSources.storageOptionsFromEnv(System.getenv()));
        options.putAll(storage);
        return new TableLocation(table, options);
    }
}
