package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.CommonKeys;
import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.util.HashMap;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * --table (a URI, or a name under --root) and --storage k=v, shared by the read commands; storage also from
 * ROLLOUT_TABLE_STORAGE_* env vars.
 */
final class TableOptions {
    @Option(
            names = "--table",
            required = true,
            description =
                    "The table: its URI (a local path, s3://bucket/prefix, az://container/prefix or abfss://...), or its"
                            + " name under --root")
    String table;

    @Option(
            names = "--root",
            description =
                    "The root of many tables (setting " + CommonKeys.TABLES_ROOT + "): --table names one under it")
    String root;

    @Option(names = "--storage", description = "Lance storage option, repeatable: aws_endpoint=http://...")
    Map<String, String> storage = new HashMap<>();

    @Option(
            names = "--pending-warn",
            descriptionKey = TableSettings.PENDING_WARN_GENERATIONS,
            description =
                    "Warn at this many pending generations in a shard (0 = no warn; default ${DEFAULT-VALUE}; setting "
                            + TableSettings.PENDING_WARN_GENERATIONS + ")")
    int pendingWarn;

    @Option(
            names = "--pending-max",
            descriptionKey = TableSettings.PENDING_MAX_GENERATIONS,
            description =
                    "Fail reads (503) above this many pending generations in a shard (0 = no cap; default ${DEFAULT-VALUE};"
                            + " setting " + TableSettings.PENDING_MAX_GENERATIONS + ")")
    int pendingMax;

    @Option(
            names = "--read-refresh-ms",
            descriptionKey = TableSettings.READ_REFRESH_MS,
            description = "See other processes' seals and merges at most this late (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.READ_REFRESH_MS + ")")
    long readRefreshMs;

    @Option(
            names = "--read-cache-bytes",
            descriptionKey = TableSettings.READ_CACHE_BYTES,
            description = "lance-core's index and metadata caches (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.READ_CACHE_BYTES + ")")
    long readCacheBytes;

    @Option(
            names = "--read-open-generations",
            descriptionKey = TableSettings.READ_OPEN_GENERATIONS,
            description = "Pending generation datasets kept open (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.READ_OPEN_GENERATIONS + ")")
    int readOpenGenerations;

    @Option(
            names = "--scan-batch-rows",
            descriptionKey = TableSettings.SCAN_BATCH_ROWS,
            description = "Rows per Arrow batch of scans and tails (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.SCAN_BATCH_ROWS + ")")
    int scanBatchRows;

    @Option(
            names = "--scan-readahead-batches",
            descriptionKey = TableSettings.SCAN_READAHEAD_BATCHES,
            description = "Batches read ahead of a scan's consumer (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.SCAN_READAHEAD_BATCHES + ")")
    int scanReadaheadBatches;

    @Option(
            names = "--scan-max-limit",
            descriptionKey = TableSettings.SCAN_MAX_LIMIT,
            description = "The largest row limit a scan accepts (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.SCAN_MAX_LIMIT + ")")
    long scanMaxLimit;

    @Option(
            names = "--scan-pending-max-rows",
            descriptionKey = TableSettings.SCAN_PENDING_MAX_ROWS,
            description = "Pending rows whose keys a scan or tail may hold (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.SCAN_PENDING_MAX_ROWS + ")")
    long scanPendingMaxRows;

    @Option(
            names = "--scan-max-concurrent",
            descriptionKey = TableSettings.SCAN_MAX_CONCURRENT,
            description = "Scans and tails served at once (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.SCAN_MAX_CONCURRENT + ")")
    int scanMaxConcurrent;

    @Option(
            names = "--tail-max-offsets",
            descriptionKey = TableSettings.TAIL_MAX_OFFSETS,
            description = "Offsets of a partition one tail answer covers at most (default ${DEFAULT-VALUE}; setting "
                    + TableSettings.TAIL_MAX_OFFSETS + ")")
    long tailMaxOffsets;

    TableSettings settings() {
        return TableSettings.DEFAULTS
                .with(TableSettings.SCAN_BATCH_ROWS, scanBatchRows)
                .with(TableSettings.SCAN_READAHEAD_BATCHES, scanReadaheadBatches)
                .with(TableSettings.SCAN_MAX_LIMIT, scanMaxLimit)
                .with(TableSettings.SCAN_PENDING_MAX_ROWS, scanPendingMaxRows)
                .with(TableSettings.SCAN_MAX_CONCURRENT, scanMaxConcurrent)
                .with(TableSettings.TAIL_MAX_OFFSETS, tailMaxOffsets)
                .with(TableSettings.PENDING_WARN_GENERATIONS, pendingWarn)
                .with(TableSettings.PENDING_MAX_GENERATIONS, pendingMax)
                .with(TableSettings.READ_REFRESH_MS, readRefreshMs)
                .with(TableSettings.READ_CACHE_BYTES, readCacheBytes)
                .with(TableSettings.READ_OPEN_GENERATIONS, readOpenGenerations);
    }

    TableLocation location() {
        if (root == null) {
            return location(table, storage);
        }
        String problem = TableCatalog.nameProblem(table);
        if (problem != null) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--table with --root: " + problem);
        }
        return location(location(root, storage).resolve(table), storage);
    }

    /** The name a table goes by in a catalog (its --table with --root), or the one table's. */
    String name() {
        return root == null ? TableCatalog.SINGLE : table;
    }

    /** A table URI with its storage options: ROLLOUT_TABLE_STORAGE_* env vars, then the given ones. */
    static TableLocation location(String uri, Map<String, String> storage) {
        Map<String, String> options = new HashMap<>(ConfigSources.storageOptionsFromEnv(System.getenv()));
        options.putAll(storage);
        return new TableLocation(uri, options);
    }
}
