package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import java.util.HashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** --table and --storage k=v, shared by the read commands; storage also from ROLLOUT_TABLE_STORAGE_* env vars. */
final class TableOptions {
    @Option(names = "--table", required = true, description = "Table URI: a local path or s3://bucket/prefix")
    String table;

    @Option(names = "--storage", description = "Lance storage option, repeatable: aws_endpoint=http://...")
    Map<String, String> storage = new HashMap<>();

    @Option(
            names = "--pending-warn",
            defaultValue = "${env:ROLLOUT_WAL_PENDING_WARN_GENERATIONS:-256}",
            description =
                    "Warn at this many pending generations in a shard (0 = no warn); env ROLLOUT_WAL_PENDING_WARN_GENERATIONS")
    int pendingWarn;

    @Option(
            names = "--pending-max",
            defaultValue = "${env:ROLLOUT_WAL_PENDING_MAX_GENERATIONS:-2048}",
            description =
                    "Fail reads (503) above this many pending generations in a shard (0 = no cap); env ROLLOUT_WAL_PENDING_MAX_GENERATIONS")
    int pendingMax;

    @Option(
            names = "--read-refresh-ms",
            defaultValue = "${env:ROLLOUT_READ_REFRESH_MS:-1000}",
            description = "See other processes' seals and merges at most this late; env ROLLOUT_READ_REFRESH_MS")
    long readRefreshMs;

    @Option(
            names = "--read-cache-bytes",
            defaultValue = "${env:ROLLOUT_READ_CACHE_BYTES:-268435456}",
            description = "lance-core's index and metadata caches; env ROLLOUT_READ_CACHE_BYTES")
    long readCacheBytes;

    @Option(
            names = "--read-open-generations",
            defaultValue = "${env:ROLLOUT_READ_OPEN_GENERATIONS:-1024}",
            description = "Pending generation datasets kept open; env ROLLOUT_READ_OPEN_GENERATIONS")
    int readOpenGenerations;

    TableSettings settings() {
        return TableSettings.DEFAULTS
                .withPendingLimits(pendingWarn, pendingMax)
                .withReadRefreshMs(readRefreshMs)
                .withReadCacheBytes(readCacheBytes)
                .withReadOpenGenerations(readOpenGenerations);
    }

    TableLocation location() {
        return location(table, storage);
    }

    /** A table URI with its storage options: ROLLOUT_TABLE_STORAGE_* env vars, then the given ones. */
    static TableLocation location(String uri, Map<String, String> storage) {
        Map<String, String> options = new HashMap<>(ConfigSources.storageOptionsFromEnv(System.getenv()));
        options.putAll(storage);
        return new TableLocation(uri, options);
    }
}
