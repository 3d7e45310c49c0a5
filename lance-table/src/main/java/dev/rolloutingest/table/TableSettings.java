package dev.rolloutingest.table;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;

/**
 * Limits of the table's reads and merges, each declared once: its key and getter here, its type, default, range and
 * documentation in its group's declarations ({@link ReadSettings}, {@link MergeSettings}). The apps' configs take
 * these declarations into their own ({@link #defineReads}, {@link #defineMerges}), so the README's table, the env vars
 * and the CLI's defaults all come from them. A new setting: its key, its declaration and its getter.
 */
public final class TableSettings {
    public static final String PENDING_WARN_GENERATIONS = "rollout.wal.pending.warn.generations";
    public static final String PENDING_MAX_GENERATIONS = "rollout.wal.pending.max.generations";
    public static final String READ_REFRESH_MS = "rollout.read.refresh.ms";
    public static final String READ_CACHE_BYTES = "rollout.read.cache.bytes";
    public static final String READ_OPEN_GENERATIONS = "rollout.read.open.generations";
    public static final String READ_GENERATION_KEYS_BYTES = "rollout.read.generation.keys.bytes";
    public static final String READ_GENERATION_COLUMNS_BYTES = "rollout.read.generation.columns.bytes";
    public static final String READ_MAX_LIST_LIMIT = "rollout.read.max.list.limit";
    public static final String SCAN_BATCH_ROWS = "rollout.scan.batch.rows";
    public static final String SCAN_READAHEAD_BATCHES = "rollout.scan.readahead.batches";
    public static final String SCAN_MAX_LIMIT = "rollout.scan.max.limit";
    public static final String SCAN_PENDING_MAX_ROWS = "rollout.scan.pending.max.rows";
    public static final String SCAN_MAX_CONCURRENT = "rollout.scan.max.concurrent";
    public static final String TAIL_MAX_OFFSETS = "rollout.tail.max.offsets";
    public static final String MERGE_MAX_GENERATIONS = "rollout.merge.max.generations";
    public static final String MERGE_MAX_BYTES = "rollout.merge.max.bytes";
    public static final String MERGE_THREADS = "rollout.merge.threads";
    public static final String MERGE_TABLES_PARALLEL = "rollout.merge.tables.parallel";
    public static final String MERGE_THREADS_IDLE_STOP_MS = "rollout.merge.threads.idle.stop.ms";
    public static final String MERGE_ROUND_MAX_BYTES = "rollout.merge.round.max.bytes";
    public static final String MERGE_SCAN_JOIN_MAX_BASE_ROWS = "rollout.merge.scan.join.max.base.rows";
    public static final String MERGE_KEY_ADDRESSES_BYTES = "rollout.merge.key.addresses.bytes";
    public static final String MERGE_KEY_ADDRESSES_FILE_DIR = "rollout.merge.key.addresses.file.dir";
    public static final String MERGE_KEY_ADDRESSES_FILE_MAX_BYTES = "rollout.merge.key.addresses.file.max.bytes";
    public static final String MERGE_APPEND_NEW_KEYS = "rollout.merge.append.new.keys";
    public static final String MERGE_ADOPT_GENERATIONS = "rollout.merge.adopt.generations";
    public static final String MERGE_ADOPT_MIN_ROWS = "rollout.merge.adopt.min.rows";
    public static final String MERGE_ADOPT_MAX_BASE_FRAGMENTS = "rollout.merge.adopt.max.base.fragments";
    public static final String MERGE_CONFLICT_RETRIES = "rollout.merge.conflict.retries";
    public static final String TABLES_MEMORY_BUDGET_BYTES = "rollout.tables.memory.budget.bytes";
    public static final String TABLES_IDLE_RELEASE_MS = "rollout.tables.idle.release.ms";

    /** The env var of the pending warn threshold, as warnings name it. */
    public static final String PENDING_WARN_KEY = "ROLLOUT_WAL_PENDING_WARN_GENERATIONS";

    public static final String PENDING_MAX_KEY = "ROLLOUT_WAL_PENDING_MAX_GENERATIONS";

    /** Settings every process that reads the table has. */
    public static ConfigDef defineReads(ConfigDef def) {
        return ReadSettings.define(def);
    }

    /** Settings of the process that merges (the merge-worker). */
    public static ConfigDef defineMerges(ConfigDef def) {
        return MergeSettings.define(def);
    }

    private static final ConfigDef ALL = defineMerges(defineReads(new ConfigDef()));

    /** Every setting at its declared default. */
    public static final TableSettings DEFAULTS = from(Map.of());

    private final Map<String, Object> values;

    private TableSettings(Map<String, Object> values) {
        this.values = Map.copyOf(values);
    }

    /**
     * The settings in {@code values} (keys of other settings ignored), each missing one at its default. A value out
     * of its range fails, naming the key.
     */
    public static TableSettings from(Map<String, ?> values) {
        Map<String, Object> own = new HashMap<>();
        values.forEach((key, value) -> {
            if (ALL.names().contains(key) && value != null) {
                own.put(key, value);
            }
        });
        return new TableSettings(new HashMap<String, Object>(new AbstractConfig(ALL, own, false).values()));
    }

    /** These settings with one of them changed (validated as {@link #from} does). */
    public TableSettings with(String key, Object value) {
        if (!ALL.names().contains(key)) {
            throw new IllegalArgumentException("not a table setting: " + key);
        }
        Map<String, Object> changed = new HashMap<>(values);
        changed.put(key, value);
        return from(changed);
    }

    private int intValue(String key) {
        return (Integer) values.get(key);
    }

    private long longValue(String key) {
        return (Long) values.get(key);
    }

    private boolean booleanValue(String key) {
        return (Boolean) values.get(key);
    }

    /** Warn once per shard per read at this many pending generations; 0 disables the warn (never the metric). */
    public int pendingWarnGenerations() {
        return intValue(PENDING_WARN_GENERATIONS);
    }

    /** A read fails fast above this many pending generations in one shard; 0 disables the cap. */
    public int pendingMaxGenerations() {
        return intValue(PENDING_MAX_GENERATIONS);
    }

    public int maxListLimit() {
        return intValue(READ_MAX_LIST_LIMIT);
    }

    public int scanBatchRows() {
        return intValue(SCAN_BATCH_ROWS);
    }

    public int scanReadaheadBatches() {
        return intValue(SCAN_READAHEAD_BATCHES);
    }

    public long scanMaxLimit() {
        return longValue(SCAN_MAX_LIMIT);
    }

    public long scanPendingMaxRows() {
        return longValue(SCAN_PENDING_MAX_ROWS);
    }

    public int scanMaxConcurrent() {
        return intValue(SCAN_MAX_CONCURRENT);
    }

    public long tailMaxOffsets() {
        return longValue(TAIL_MAX_OFFSETS);
    }

    public long readRefreshMs() {
        return longValue(READ_REFRESH_MS);
    }

    public long readGenerationKeysBytes() {
        return longValue(READ_GENERATION_KEYS_BYTES);
    }

    public long readGenerationColumnsBytes() {
        return longValue(READ_GENERATION_COLUMNS_BYTES);
    }

    public long readCacheBytes() {
        return longValue(READ_CACHE_BYTES);
    }

    public long tablesMemoryBudgetBytes() {
        return longValue(TABLES_MEMORY_BUDGET_BYTES);
    }

    /** Generations one merge pass takes at most (0 = unbounded). */
    public int mergeMaxGenerations() {
        return intValue(MERGE_MAX_GENERATIONS);
    }

    /** Sealed bytes one merge pass takes at most; the oldest generation always. */
    public long mergeMaxBytes() {
        return longValue(MERGE_MAX_BYTES);
    }

    /** Sealed bytes one merge round takes at most over all its shards. */
    public long mergeRoundMaxBytes() {
        return longValue(MERGE_ROUND_MAX_BYTES);
    }

    /** Threads that prepare merge rounds, shared by the tables of a process. */
    public int mergeThreads() {
        return intValue(MERGE_THREADS);
    }

    /** Merge rounds in flight at once over the tables of a process. */
    public int mergeTablesParallel() {
        return intValue(MERGE_TABLES_PARALLEL);
    }

    /** How long an idle merge thread lives. */
    public long mergeThreadsIdleStopMs() {
        return longValue(MERGE_THREADS_IDLE_STOP_MS);
    }

    public long tablesIdleReleaseMs() {
        return longValue(TABLES_IDLE_RELEASE_MS);
    }

    public int readOpenGenerations() {
        return intValue(READ_OPEN_GENERATIONS);
    }

    public int mergeConflictRetries() {
        return intValue(MERGE_CONFLICT_RETRIES);
    }

    public long mergeScanJoinMaxBaseRows() {
        return longValue(MERGE_SCAN_JOIN_MAX_BASE_ROWS);
    }

    /** Memory of a table's book of its newest keys' row addresses (see {@link #MERGE_KEY_ADDRESSES_BYTES}). */
    public long mergeKeyAddressesBytes() {
        return longValue(MERGE_KEY_ADDRESSES_BYTES);
    }

    /**
     * The folder of the merge committers' files of every base key's address, a subfolder a table (see {@link
     * #MERGE_KEY_ADDRESSES_FILE_DIR}); empty: {@code rollout-key-addresses} in the JVM's temporary folder.
     */
    public java.nio.file.Path mergeKeyAddressesFileDir() {
        String dir = (String) values.get(MERGE_KEY_ADDRESSES_FILE_DIR);
        return dir == null || dir.isBlank()
                ? java.nio.file.Path.of(System.getProperty("java.io.tmpdir"), "rollout-key-addresses")
                : java.nio.file.Path.of(dir);
    }

    /** The largest file of a table's key addresses (see {@link #MERGE_KEY_ADDRESSES_FILE_MAX_BYTES}); 0 = none. */
    public long mergeKeyAddressesFileMaxBytes() {
        return longValue(MERGE_KEY_ADDRESSES_FILE_MAX_BYTES);
    }

    public boolean mergeAppendNewKeys() {
        return booleanValue(MERGE_APPEND_NEW_KEYS);
    }

    /** Whether any generation may be adopted. */
    public boolean mergeAdoptGenerations() {
        return booleanValue(MERGE_ADOPT_GENERATIONS);
    }

    /** The fewest rows of a generation adopted whole (see {@link #MERGE_ADOPT_MIN_ROWS}). */
    public long mergeAdoptMinRows() {
        return longValue(MERGE_ADOPT_MIN_ROWS);
    }

    /** The base's fragments beyond which no generation is adopted (see {@link #MERGE_ADOPT_MAX_BASE_FRAGMENTS}). */
    public int mergeAdoptMaxBaseFragments() {
        return intValue(MERGE_ADOPT_MAX_BASE_FRAGMENTS);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof TableSettings s && s.values.equals(values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return "TableSettings" + values;
    }
}
