package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableSettings.PENDING_MAX_GENERATIONS;
import static dev.rolloutingest.table.TableSettings.PENDING_WARN_GENERATIONS;
import static dev.rolloutingest.table.TableSettings.READ_CACHE_BYTES;
import static dev.rolloutingest.table.TableSettings.READ_GENERATION_COLUMNS_BYTES;
import static dev.rolloutingest.table.TableSettings.READ_GENERATION_KEYS_BYTES;
import static dev.rolloutingest.table.TableSettings.READ_MAX_LIST_LIMIT;
import static dev.rolloutingest.table.TableSettings.READ_OPEN_GENERATIONS;
import static dev.rolloutingest.table.TableSettings.READ_REFRESH_MS;
import static dev.rolloutingest.table.TableSettings.SCAN_BATCH_ROWS;
import static dev.rolloutingest.table.TableSettings.SCAN_MAX_CONCURRENT;
import static dev.rolloutingest.table.TableSettings.SCAN_MAX_LIMIT;
import static dev.rolloutingest.table.TableSettings.SCAN_PENDING_MAX_ROWS;
import static dev.rolloutingest.table.TableSettings.SCAN_READAHEAD_BATCHES;
import static dev.rolloutingest.table.TableSettings.TABLES_IDLE_RELEASE_MS;
import static dev.rolloutingest.table.TableSettings.TABLES_MEMORY_BUDGET_BYTES;
import static dev.rolloutingest.table.TableSettings.TAIL_MAX_OFFSETS;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;

import org.apache.kafka.common.config.ConfigDef;

/**
 * The declarations (type, default, range, documentation) of the settings every process that reads the table has:
 * pending-generation limits, the read catalog and its caches, lists, scans and tails, the tables' memory. Their keys
 * and getters are {@link TableSettings}'.
 */
final class ReadSettings {
    private ReadSettings() {}

    /** Declares the read settings in {@code def}, in the order the README's table lists them. */
    static ConfigDef define(ConfigDef def) {
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
                        "With many tables: memory the open tables keep between uses (merge key filters and books"
                                + " of key addresses, read catalogs' key filters and positions), all tables together;"
                                + " over it the least recently used idle tables let theirs go and build it again when"
                                + " used (0 = no budget)")
                .define(
                        TABLES_IDLE_RELEASE_MS,
                        LONG,
                        600_000L,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "With many tables: a table unused this long lets go of its key filters and open handles,"
                                + " whatever the budget (0 = only over the budget)");
    }
}
