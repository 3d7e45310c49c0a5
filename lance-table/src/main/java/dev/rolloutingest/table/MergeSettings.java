package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableSettings.MERGE_ADOPT_GENERATIONS;
import static dev.rolloutingest.table.TableSettings.MERGE_ADOPT_MAX_BASE_FRAGMENTS;
import static dev.rolloutingest.table.TableSettings.MERGE_ADOPT_MIN_ROWS;
import static dev.rolloutingest.table.TableSettings.MERGE_APPEND_NEW_KEYS;
import static dev.rolloutingest.table.TableSettings.MERGE_CONFLICT_RETRIES;
import static dev.rolloutingest.table.TableSettings.MERGE_KEY_ADDRESSES_BYTES;
import static dev.rolloutingest.table.TableSettings.MERGE_KEY_ADDRESSES_FILE_DIR;
import static dev.rolloutingest.table.TableSettings.MERGE_KEY_ADDRESSES_FILE_MAX_BYTES;
import static dev.rolloutingest.table.TableSettings.MERGE_MAX_BYTES;
import static dev.rolloutingest.table.TableSettings.MERGE_MAX_GENERATIONS;
import static dev.rolloutingest.table.TableSettings.MERGE_ROUND_MAX_BYTES;
import static dev.rolloutingest.table.TableSettings.MERGE_SCAN_JOIN_MAX_BASE_ROWS;
import static dev.rolloutingest.table.TableSettings.MERGE_TABLES_PARALLEL;
import static dev.rolloutingest.table.TableSettings.MERGE_THREADS;
import static dev.rolloutingest.table.TableSettings.MERGE_THREADS_IDLE_STOP_MS;
import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.BOOLEAN;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import org.apache.kafka.common.config.ConfigDef;

/**
 * The declarations (type, default, range, documentation) of the settings of the process that merges (the
 * merge-worker): pass and round limits, threads, the append and adoption paths, conflict retries. Their keys and
 * getters are {@link TableSettings}'.
 */
final class MergeSettings {
    private MergeSettings() {}

    /** Declares the merge settings in {@code def}, in the order the README's table lists them. */
    static ConfigDef define(ConfigDef def) {
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
                        MERGE_KEY_ADDRESSES_BYTES,
                        LONG,
                        64L << 20,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Memory per table, at most, of the merge committer's book of where the base's newest keys"
                                + " sit (it grows with the keys it reads, 37-73 bytes a key: 64 MiB holds the newest"
                                + " 0.9-1.8M keys, ~75 bytes a base row the whole table): an update of a key it holds"
                                + " finds the row it replaces at its address, not by a lookup in the record_id index"
                                + " (~0.2-0.7 ms a key), and replaces it unread when it is newer than every row of the"
                                + " row's fragment and no one but this committer changed the fragment since it was"
                                + " read (else a take of the row); filled only once a commit has updates, so a table"
                                + " of new keys never pays for it. 0 = every update through the index")
                .define(
                        MERGE_KEY_ADDRESSES_FILE_MAX_BYTES,
                        LONG,
                        4L << 30,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Local disk per table, at most, of the merge committer's file of where every base key sat when"
                                + " it last read the base whole (24 bytes a base row, 1/16 byte a row of memory: 4 GiB"
                                + " holds 178M rows): an update of an old key the book of the newest keys does not hold"
                                + " finds its row by a block read (and a take, when someone else changed the row's"
                                + " fragment since), not a lookup in the record_id index. Built in the background once a"
                                + " commit meets such updates, again when a quarter of the rows moved or are newer than it;"
                                + " kept across restarts. A table larger than this has none. 0 = no file")
                .define(
                        MERGE_KEY_ADDRESSES_FILE_DIR,
                        STRING,
                        "",
                        LOW,
                        "Folder of the merge committers' files of key addresses, a subfolder a table (empty: the JVM's"
                                + " temporary folder); losing it costs a rebuild, never a wrong row")
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
                        1_000L,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Only a generation of at least this many rows is adopted; smaller ones (a trickle sealed by"
                                + " age) are written together, one fragment a commit, so they do not spend the base's"
                                + " fragments (rollout.merge.adopt.max.base.fragments) one each")
                .define(
                        MERGE_ADOPT_MAX_BASE_FRAGMENTS,
                        INT,
                        512,
                        ConfigDef.Range.atLeast(0),
                        MEDIUM,
                        "Generations are adopted only while the base has fewer fragments than this: each adopted"
                                + " generation stays a fragment of its own until compaction"
                                + " (rollout.compaction.interval.ms), and every commit and lookup pays for the count"
                                + " (listing 1,000 fragments ~10 ms a commit). Beyond it their rows are written, one"
                                + " fragment a commit, until a compaction folds the small fragments. Adopting a"
                                + " generation instead of writing it saves a full read and write of its rows (a warm"
                                + " drain of 2M rollouts: lance-core's and the merge's CPU while landing 7.9 s"
                                + " instead of 19.8 s, docs/benchmarks.md); 0 = never adopt")
                .defineInternal(
                        MERGE_CONFLICT_RETRIES,
                        INT,
                        20,
                        ConfigDef.Range.atLeast(0),
                        LOW,
                        "How often a merge's data commit refused by another commit is checked and tried again");
    }
}
