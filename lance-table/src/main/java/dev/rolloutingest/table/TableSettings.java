package dev.rolloutingest.table;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.BOOLEAN;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;

/**
 * Limits of the table's reads and merges, each declared once here (key, type, default, range, documentation): the
 * apps' configs take these declarations into their own ({@link #defineReads}, {@link #defineMerges}), so the README's
 * table, the env vars and the CLI's defaults all come from them. A new setting: its declaration and its getter.
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
    public static final String MERGE_APPEND_NEW_KEYS = "rollout.merge.append.new.keys";
    public static final String MERGE_ADOPT_GENERATIONS = "rollout.merge.adopt.generations";
    public static final String MERGE_ADOPT_MIN_ROWS = "rollout.merge.adopt.min.rows";
    public static final String MERGE_CONFLICT_RETRIES = "rollout.merge.conflict.retries";
    public static final String TABLES_MEMORY_BUDGET_BYTES = "rollout.tables.memory.budget.bytes";
    public static final String TABLES_IDLE_RELEASE_MS = "rollout.tables.idle.release.ms";

    /** The env var of the pending warn threshold, as warnings name it. */
    public static final String PENDING_WARN_KEY = "ROLLOUT_WAL_PENDING_WARN_GENERATIONS";

    public static final String PENDING_MAX_KEY = "ROLLOUT_WAL_PENDING_MAX_GENERATIONS";

    /** Settings every process that reads the table has. */
    public static ConfigDef defineReads(ConfigDef def) {
        return def.define(
                        PENDING_WARN_GENERATIONS,
                        INT,
                        256,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Reads warn once per shard at this many pending (unmerged)"
                                + " generations, with the table and shard (0 = no warn; the metric is always sampled)")
                .define(
                        PENDING_MAX_GENERATIONS,
                        INT,
                        2048,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Reads fail fast (the read API answers 503) when a shard has"
                                + " more pending generations than this (0 = no cap)")
                .define(
                        READ_REFRESH_MS,
                        LONG,
                        1_000L,
                        ConfigDef.Range.between(0, 3_600_000),
                        MEDIUM,
                        "Readers see generations sealed and merges committed by other processes at most this"
                                + " late: how often the cached catalog of seals and the base handle are refreshed")
                .define(
                        READ_CACHE_BYTES,
                        LONG,
                        256L << 20,
                        ConfigDef.Range.atLeast(1L << 20),
                        LOW,
                        "Memory for lance-core's index and metadata caches of this process's table reads; with"
                                + " many tables (rollout.tables.root) one cache of this size serves them all")
                .define(
                        READ_OPEN_GENERATIONS,
                        INT,
                        1024,
                        ConfigDef.Range.atLeast(0),
                        LOW,
                        "Pending generation datasets kept open for lookups (least recently used closed first)")
                .define(
                        READ_GENERATION_KEYS_BYTES,
                        LONG,
                        64L << 20,
                        ConfigDef.Range.atLeast(0L),
                        LOW,
                        "Memory kept with the open pending generations: where each record_id sits (lookups, 12"
                                + " bytes a key) and each row's key and order (scans and tails, ~100 bytes a row);"
                                + " past it the least recently used generations are closed and read again when"
                                + " needed")
                .define(
                        READ_GENERATION_COLUMNS_BYTES,
                        LONG,
                        64L << 20,
                        ConfigDef.Range.atLeast(0L),
                        LOW,
                        "Memory (off-heap) for whole columns of the pending generations, read once and kept so a"
                                + " scan or tail copies a generation's rows instead of scanning it again; a column"
                                + " that does not fit is not read whole (its generation's passes scan it), the"
                                + " columns kept still serve. 0 = keep none")
                .defineInternal(
                        READ_MAX_LIST_LIMIT,
                        INT,
                        10_000,
                        ConfigDef.Range.atLeast(1),
                        LOW,
                        "The largest page a list read returns")
                .define(
                        SCAN_BATCH_ROWS,
                        INT,
                        4096,
                        ConfigDef.Range.between(1, 65_536),
                        MEDIUM,
                        "Rows per Arrow batch of a scan or tail (GET /rollouts:scan, /rollouts:tail, rollout-ingest"
                                + " scan): what one read holds in memory is a few batches, whatever the result size;"
                                + " a client may ask for smaller batches, never larger")
                .define(
                        SCAN_READAHEAD_BATCHES,
                        INT,
                        4,
                        ConfigDef.Range.between(1, 64),
                        LOW,
                        "Batches lance-core reads ahead of a scan or tail's consumer (memory: this many batches more)")
                .define(
                        SCAN_MAX_LIMIT,
                        LONG,
                        100_000_000L,
                        ConfigDef.Range.atLeast(1),
                        LOW,
                        "The largest row limit a scan accepts (a larger one is a bad request; no limit = every row)")
                .define(
                        SCAN_PENDING_MAX_ROWS,
                        LONG,
                        2_000_000L,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "A scan or tail first reads the key and order of every pending (unmerged) row (~100 bytes"
                                + " each) to hide the base rows they replace; above this many pending rows it answers"
                                + " 503 until the merge-worker has caught up")
                .define(
                        SCAN_MAX_CONCURRENT,
                        INT,
                        2,
                        ConfigDef.Range.atLeast(1),
                        MEDIUM,
                        "Scans and tails one table serves at once; more answer 429 (each holds a few batches and a"
                                + " read thread while its client reads)")
                .define(
                        TAIL_MAX_OFFSETS,
                        LONG,
                        1_000_000L,
                        ConfigDef.Range.atLeast(1),
                        LOW,
                        "The most input offsets of a partition one tail answer covers (its cursor moves on by at"
                                + " most this; the answer says when there is more)")
                .define(
                        TABLES_MEMORY_BUDGET_BYTES,
                        LONG,
                        1L << 30,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "With many tables: memory the open tables keep between uses (merge key filters, read"
                                + " catalogs' key filters and positions), all tables together; over it the least"
                                + " recently used idle tables let theirs go and build it again when used (0 = no"
                                + " budget)")
                .define(
                        TABLES_IDLE_RELEASE_MS,
                        LONG,
                        600_000L,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "With many tables: a table unused this long lets go of its key filters and open handles,"
                                + " whatever the budget (0 = only over the budget)");
    }

    /** Settings of the process that merges (the merge-worker). */
    public static ConfigDef defineMerges(ConfigDef def) {
        return def.define(
                        MERGE_MAX_GENERATIONS,
                        INT,
                        8,
                        ConfigDef.Range.atLeast(0),
                        HIGH,
                        "ROLLOUT_MERGE_MAX_GENERATIONS: at most this many oldest pending generations per pass (0 = unbounded)")
                .define(
                        MERGE_MAX_BYTES,
                        LONG,
                        48L << 20,
                        ConfigDef.Range.atLeast(1),
                        HIGH,
                        "At most this many sealed bytes per pass; the oldest generation is always taken. At most half of"
                                + " lance-core's merge memory pool (LANCE_MEM_POOL_SIZE, 100 MiB by default): a merge commit"
                                + " holds its source there and fails above it")
                .define(
                        MERGE_THREADS,
                        INT,
                        2,
                        ConfigDef.Range.between(1, 64),
                        MEDIUM,
                        "Shards of merge rounds read and de-duplicated in parallel, off the stream threads: one pool"
                                + " shared by all tables (a round's commit is one, serial)")
                .define(
                        MERGE_TABLES_PARALLEL,
                        INT,
                        4,
                        ConfigDef.Range.between(1, 256),
                        MEDIUM,
                        "Merge rounds in flight at once (being prepared or committed) over all tables of this process;"
                                + " each table commits one round at a time and may prepare its next meanwhile. Tables with"
                                + " work are served in turn, so a hot table gets one round per round of each waiting"
                                + " table. Memory: up to this many rounds of rollout.merge.round.max.bytes")
                .define(
                        MERGE_THREADS_IDLE_STOP_MS,
                        LONG,
                        60_000L,
                        ConfigDef.Range.atLeast(1_000L),
                        LOW,
                        "A table's committer thread and the shared preparer threads stop after this long without a merge"
                                + " to do and start again with the next, so a worker that served many tables keeps"
                                + " threads only for the ones merging")
                .define(
                        MERGE_ROUND_MAX_BYTES,
                        LONG,
                        192L << 20,
                        ConfigDef.Range.atLeast(1),
                        MEDIUM,
                        "Sealed bytes one merge round folds at most over all its shards; shards past it wait for the next"
                                + " round, so merge memory is bounded by the round. A round commits its rows (cut into"
                                + " commits of at most LANCE_MEM_POOL_SIZE's bytes each), then the marks")
                .define(
                        MERGE_SCAN_JOIN_MAX_BASE_ROWS,
                        LONG,
                        2_000_000L,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Merge commits into a base of at most this many rows find the base rows of the keys the key"
                                + " filter cannot rule out by a scan of the base's key and order columns (~0.5 us a"
                                + " base row, whatever the keys); larger bases look each key up through the record_id"
                                + " index (~0.2 ms a key). 0 = always the index. At most 1/1000 of the base's rows are"
                                + " always looked up through the index")
                .define(
                        MERGE_APPEND_NEW_KEYS,
                        BOOLEAN,
                        true,
                        MEDIUM,
                        "Merge rows whose record_id the committer's Bloom filter of the base's keys (~1.8 bytes a key)"
                                + " rules out are appended without a lookup, a commit that costs what it adds; only the"
                                + " others are looked up in the base. false = every key is looked up (a commit that"
                                + " pays for the whole base)")
                .define(
                        MERGE_ADOPT_GENERATIONS,
                        BOOLEAN,
                        true,
                        MEDIUM,
                        "A generation all of whose rows are appended (every key new to the base and to the round)"
                                + " becomes a base fragment as it is: its data files are hard-linked (local disk) or"
                                + " copied server-side (S3, Azure) into the base instead of written again. false = its rows"
                                + " are written")
                .define(
                        MERGE_ADOPT_MIN_ROWS,
                        LONG,
                        50_000L,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Only a generation of at least this many rows is adopted: each adopted generation stays a"
                                + " base fragment of its own until compaction, and lookups and every later commit pay"
                                + " for the fragment count (a sustained run adopting every 10,000-row generation left"
                                + " ~1,260 fragments at 12.6M rows); smaller ones are written together, one fragment"
                                + " a commit")
                .defineInternal(
                        MERGE_CONFLICT_RETRIES,
                        INT,
                        20,
                        ConfigDef.Range.atLeast(0),
                        LOW,
                        "How often a merge's data commit refused by another commit is checked and tried again");
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
