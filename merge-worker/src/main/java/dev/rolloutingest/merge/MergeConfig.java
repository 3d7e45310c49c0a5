package dev.rolloutingest.merge;

import static dev.rolloutingest.runtime.CommonKeys.*;
import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

import dev.rolloutingest.runtime.AppConfig;
import dev.rolloutingest.runtime.CommonKeys;
import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.maintenance.KeyIndexTiers;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * Every setting of merge-worker: key, type, default, doc. Each key is also an env var (upper case, dots
 * as underscores) that wins over the properties file. A bad value fails at start naming the key.
 *
 * <p>Over 300 lines because it declares every setting of the merge-worker, one define each with its doc, default and
 * range.
 */
public final class MergeConfig extends AppConfig {
    public static final String GENERATIONS_TOPIC = CommonKeys.GENERATIONS_TOPIC;
    public static final String MERGES_TOPIC = "rollout.merges.topic";
    public static final String MAX_GENERATIONS = TableSettings.MERGE_MAX_GENERATIONS;
    public static final String MAX_BYTES = TableSettings.MERGE_MAX_BYTES;
    public static final String AFTER_GENERATIONS = "rollout.merge.after.generations";
    public static final String MAX_PENDING_AGE_MS = "rollout.merge.max.pending.age.ms";
    public static final String THREADS = TableSettings.MERGE_THREADS;
    public static final String TABLES_PARALLEL = TableSettings.MERGE_TABLES_PARALLEL;
    public static final String THREADS_IDLE_STOP_MS = TableSettings.MERGE_THREADS_IDLE_STOP_MS;
    public static final String MAINTENANCE_THREADS = "rollout.maintenance.threads";
    public static final String MAINTENANCE_TIMEOUT_MS = "rollout.maintenance.timeout.ms";
    public static final String CHECK_INTERVAL_MS = "rollout.merge.check.interval.ms";
    public static final String RECONCILE_INTERVAL_MS = "rollout.merge.reconcile.interval.ms";
    public static final String COOLDOWN_AFTER_FAILURES = "task.cooldown.after.failures";
    public static final String COOLDOWN_BASE_SECS = "task.cooldown.base.secs";
    public static final String COOLDOWN_MAX_SECS = "task.cooldown.max.secs";
    public static final String COOLDOWN_RECORD_TTL_SECS = "task.cooldown.record.ttl.secs";
    public static final String COMPACTION_INTERVAL_MS = "rollout.compaction.interval.ms";
    public static final String ROUND_MAX_BYTES = TableSettings.MERGE_ROUND_MAX_BYTES;
    public static final String SCAN_JOIN_MAX_BASE_ROWS = TableSettings.MERGE_SCAN_JOIN_MAX_BASE_ROWS;
    public static final String APPEND_NEW_KEYS = TableSettings.MERGE_APPEND_NEW_KEYS;
    public static final String ADOPT_GENERATIONS = TableSettings.MERGE_ADOPT_GENERATIONS;
    public static final String ADOPT_MIN_ROWS = TableSettings.MERGE_ADOPT_MIN_ROWS;
    public static final String MERGED_LAG_GROUP = "rollout.lag.merged.group";
    public static final String INDEX_OPTIMIZE_INTERVAL_MS = "rollout.index.optimize.interval.ms";
    public static final String INDEX_MAX_UNINDEXED_ROWS = "rollout.index.max.unindexed.rows";
    public static final String INDEX_MAX_OPEN_SEGMENTS = "rollout.index.max.open.segments";
    public static final String INDEX_SEGMENT_MAX_ROWS = "rollout.index.segment.max.rows";
    public static final String COMPACTION_TARGET_ROWS = "rollout.compaction.target.rows.per.fragment";
    public static final String GC_INTERVAL_MS = "rollout.gc.interval.ms";
    public static final String GC_GRACE_MS = "rollout.gc.grace.ms";
    public static final String DELETE_RETENTION_MS = "rollout.delete.retention.ms";
    public static final String SNAPSHOT_TOPIC = "rollout.snapshot.topic";

    public static final ConfigDef DEFINITION = TableSettings.defineMerges(CommonKeys.define(
                    "rollout-merge",
                    "data/merge-state",
                    8091,
                    "/cooldowns, /pending, /merge/{shard}, /metrics, /health"))
            .define(
                    MERGES_TOPIC,
                    STRING,
                    "rollout-merges",
                    new ConfigDef.NonEmptyString(),
                    MEDIUM,
                    "Topic of GenerationsMerged events (output), key = shard id")
            .define(
                    AFTER_GENERATIONS,
                    INT,
                    8,
                    ConfigDef.Range.atLeast(0),
                    HIGH,
                    "ROLLOUT_MERGE_AFTER_GENERATIONS: merge a shard when it has this many pending generations"
                            + " (0 = the count trigger is disabled, not a threshold of 0)")
            .define(
                    MAX_PENDING_AGE_MS,
                    LONG,
                    60_000L,
                    ConfigDef.Range.atLeast(0),
                    HIGH,
                    "Merge a shard when its oldest pending generation is this old (wall clock; 0 = disabled)")
            .define(
                    MAINTENANCE_THREADS,
                    INT,
                    2,
                    ConfigDef.Range.between(1, 64),
                    LOW,
                    "Tables whose upkeep (compaction, key index, GC, drop of old deletes) runs at once: a table"
                            + " whose upkeep is slow holds one of them, the others serve the rest")
            .define(
                    MAINTENANCE_TIMEOUT_MS,
                    LONG,
                    1_800_000L,
                    ConfigDef.Range.atLeast(1_000),
                    LOW,
                    "An upkeep job of a table still running after this long counts as a failure of that table"
                            + " (towards its cooldown); its thread is free again once the job returns")
            .define(
                    CHECK_INTERVAL_MS,
                    LONG,
                    200L,
                    ConfigDef.Range.between(10, 60_000),
                    LOW,
                    "How often finished passes are applied and the time trigger is checked")
            .define(
                    RECONCILE_INTERVAL_MS,
                    LONG,
                    30_000L,
                    ConfigDef.Range.atLeast(1_000),
                    LOW,
                    "How often each shard's pending list is reconciled with the table (watermark and seals)")
            .define(
                    COOLDOWN_AFTER_FAILURES,
                    INT,
                    3,
                    ConfigDef.Range.atLeast(0),
                    HIGH,
                    "TASK_COOLDOWN_AFTER_FAILURES: consecutive failures of a target before automatic triggers skip it"
                            + " (0 = never cool down)")
            .define(
                    COOLDOWN_BASE_SECS,
                    LONG,
                    600L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "TASK_COOLDOWN_BASE_SECS: first cooldown; doubles with each further failure (0 = disabled)")
            .define(
                    COOLDOWN_MAX_SECS,
                    LONG,
                    21_600L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "TASK_COOLDOWN_MAX_SECS: longest cooldown")
            .define(
                    COOLDOWN_RECORD_TTL_SECS,
                    LONG,
                    86_400L,
                    ConfigDef.Range.atLeast(1),
                    LOW,
                    "A failure record with no failure for this long (and no active cooldown) is removed")
            .define(
                    MERGED_LAG_GROUP,
                    STRING,
                    "rollout-ingest-merged",
                    null,
                    MEDIUM,
                    "Consumer group (no consumer ever joins it) whose committed offsets are each input partition's first"
                            + " offset not yet in the base table: standard lag tools show it as the records not yet"
                            + " merged. Name it after the ingest app's application.id (<id>-merged). Empty disables")
            .define(
                    INDEX_OPTIMIZE_INTERVAL_MS,
                    LONG,
                    2_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "How often the merge-worker checks whether the record_id index of the base must take in the"
                            + " fragments merges added (0 = never); rebuilt instead after a compaction")
            .define(
                    INDEX_MAX_UNINDEXED_ROWS,
                    LONG,
                    10_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "Merged rows the record_id index may leave uncovered before it is brought up to date: lookups scan"
                            + " them in full (about 0.25 ms per 1,000 rows); taking them up costs 10-60 ms (a segment)")
            .define(
                    INDEX_MAX_OPEN_SEGMENTS,
                    INT,
                    KeyIndexTiers.DEFAULT.maxOpenSegments(),
                    ConfigDef.Range.between(1, 64),
                    LOW,
                    "Open segments (under half of " + INDEX_SEGMENT_MAX_ROWS + ") the record_id index keeps at most:"
                            + " new fragments get a segment of their own, at this many they are merged with the open"
                            + " ones, smallest first, up to that cap; each segment adds ~0.05 ms to a lookup")
            .define(
                    INDEX_SEGMENT_MAX_ROWS,
                    LONG,
                    KeyIndexTiers.DEFAULT.maxSegmentRows(),
                    ConfigDef.Range.atLeast(1),
                    LOW,
                    "Rows a record_id index segment built by a take-up holds at most: no take-up re-indexes more"
                            + " (~0.8 s per million rows on 2 cores), and the index holds about table rows / (this / 2)"
                            + " full segments; a compaction rebuilds the index whole")
            .define(
                    COMPACTION_INTERVAL_MS,
                    LONG,
                    600_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "Compact the base table this often (0 = never)")
            .define(
                    COMPACTION_TARGET_ROWS,
                    LONG,
                    1_000_000L,
                    ConfigDef.Range.atLeast(1),
                    LOW,
                    "Target rows per fragment for compaction")
            .define(
                    GC_INTERVAL_MS,
                    LONG,
                    300_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "Delete merged generation folders this often (0 = never)")
            .define(
                    GC_GRACE_MS,
                    LONG,
                    600_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "Only generations merged at least this long ago are deleted (readers may still hold them)")
            .define(
                    DELETE_RETENTION_MS,
                    LONG,
                    86_400_000L,
                    ConfigDef.Range.atLeast(0),
                    MEDIUM,
                    "A delete stays in the base as a row (hidden from reads) at least this long, and until every pending"
                            + " generation's rows were ingested after it: a value older than the delete that merges"
                            + " later (from another partition) must find it there and lose. Dropped on the"
                            + " rollout.gc.interval.ms schedule. Keep it far above the ingest's seal age: a value"
                            + " not yet sealed is not seen as pending")
            .define(
                    SNAPSHOT_TOPIC,
                    STRING,
                    "rollouts",
                    new ConfigDef.NonEmptyString(),
                    LOW,
                    "The ingest app's input topic (its rollout.input.topic): snapshots record their offsets per"
                            + " partition of it, and a cut names its partitions");

    private MergeConfig(Map<String, Object> raw) {
        super(DEFINITION, raw);
        if (cooldownMaxSecs() < cooldownBaseSecs()) {
            throw new ConfigException(COOLDOWN_MAX_SECS, cooldownMaxSecs(), "must be >= " + COOLDOWN_BASE_SECS);
        }
        requireWithinMergeMemory(MAX_BYTES);
    }

    public static MergeConfig load(Properties file, Map<String, String> env) {
        return new MergeConfig(ConfigSources.resolve(DEFINITION, file, env));
    }

    public static MergeConfig of(Map<String, ?> values) {
        return new MergeConfig(new HashMap<>(values));
    }

    public String generationsTopic() {
        return parsed.getString(GENERATIONS_TOPIC);
    }

    public String mergesTopic() {
        return parsed.getString(MERGES_TOPIC);
    }

    public int maxGenerations() {
        return parsed.getInt(MAX_GENERATIONS);
    }

    public long maxBytes() {
        return parsed.getLong(MAX_BYTES);
    }

    public int afterGenerations() {
        return parsed.getInt(AFTER_GENERATIONS);
    }

    public long maxPendingAgeMs() {
        return parsed.getLong(MAX_PENDING_AGE_MS);
    }

    public int threads() {
        return parsed.getInt(THREADS);
    }

    public int tablesParallel() {
        return parsed.getInt(TABLES_PARALLEL);
    }

    public java.time.Duration threadsIdleStop() {
        return java.time.Duration.ofMillis(parsed.getLong(THREADS_IDLE_STOP_MS));
    }

    public int maintenanceThreads() {
        return parsed.getInt(MAINTENANCE_THREADS);
    }

    public java.time.Duration maintenanceTimeout() {
        return java.time.Duration.ofMillis(parsed.getLong(MAINTENANCE_TIMEOUT_MS));
    }

    public long checkIntervalMs() {
        return parsed.getLong(CHECK_INTERVAL_MS);
    }

    public long reconcileIntervalMs() {
        return parsed.getLong(RECONCILE_INTERVAL_MS);
    }

    public int cooldownAfterFailures() {
        return parsed.getInt(COOLDOWN_AFTER_FAILURES);
    }

    public long cooldownBaseSecs() {
        return parsed.getLong(COOLDOWN_BASE_SECS);
    }

    public long cooldownMaxSecs() {
        return parsed.getLong(COOLDOWN_MAX_SECS);
    }

    public Duration cooldownRecordTtl() {
        return Duration.ofSeconds(parsed.getLong(COOLDOWN_RECORD_TTL_SECS));
    }

    public String mergedLagGroup() {
        return parsed.getString(MERGED_LAG_GROUP).trim();
    }

    public long roundMaxBytes() {
        return parsed.getLong(ROUND_MAX_BYTES);
    }

    /** How the record_id index takes up the fragments merges add. */
    public KeyIndexTiers keyIndexTiers() {
        return new KeyIndexTiers(
                parsed.getLong(INDEX_MAX_UNINDEXED_ROWS),
                parsed.getInt(INDEX_MAX_OPEN_SEGMENTS),
                parsed.getLong(INDEX_SEGMENT_MAX_ROWS));
    }

    public long indexOptimizeIntervalMs() {
        return parsed.getLong(INDEX_OPTIMIZE_INTERVAL_MS);
    }

    public long compactionIntervalMs() {
        return parsed.getLong(COMPACTION_INTERVAL_MS);
    }

    public String snapshotTopic() {
        return parsed.getString(SNAPSHOT_TOPIC);
    }

    public long compactionTargetRows() {
        return parsed.getLong(COMPACTION_TARGET_ROWS);
    }

    public long gcIntervalMs() {
        return parsed.getLong(GC_INTERVAL_MS);
    }

    public Duration deleteRetention() {
        return Duration.ofMillis(parsed.getLong(DELETE_RETENTION_MS));
    }

    public Duration gcGrace() {
        return Duration.ofMillis(parsed.getLong(GC_GRACE_MS));
    }
}
