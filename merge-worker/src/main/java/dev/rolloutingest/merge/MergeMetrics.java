package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.TableSeries;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** The merge-worker's meters. No shard tag (cardinality); tags from fixed sets only. */
public final class MergeMetrics {
    private final MeterRegistry registry;
    private final Counter cooldowns;
    private final Counter skippedCoolingDown;
    private final Counter mergedGenerations;
    private final Map<Integer, Long> backlogByTask = new ConcurrentHashMap<>();

    private final TableSeries tableSeries;
    private final Map<String, Counter> tableRows = new ConcurrentHashMap<>();
    /** Per task, per table it holds shards of: the most pending generations of one shard, and shards cooling. */
    private final Map<Integer, Map<String, TableBacklog>> tableBacklogByTask = new ConcurrentHashMap<>();

    private final Set<String> tableBacklogTags = ConcurrentHashMap.newKeySet();

    /** What one task knows of one table: its shard with the most pending generations, its shards cooling down. */
    record TableBacklog(long maxPending, int coolingShards) {
        /** One shard's. */
        static TableBacklog ofShard(long pending, boolean cooling) {
            return new TableBacklog(pending, cooling ? 1 : 0);
        }

        /** Two sets of shards of one table together. */
        TableBacklog plus(TableBacklog other) {
            return new TableBacklog(Math.max(maxPending, other.maxPending), coolingShards + other.coolingShards);
        }
    }

    public MergeMetrics(MeterRegistry registry) {
        this(registry, new TableSeries(TableSeries.DEFAULT_MAX));
    }

    public MergeMetrics(MeterRegistry registry, TableSeries tableSeries) {
        this.tableSeries = tableSeries;
        this.registry = registry;
        this.cooldowns = Counter.builder("merge.cooldowns")
                .description("Targets that entered (or extended) a cooldown")
                .register(registry);
        this.skippedCoolingDown = Counter.builder("rollout.merge.skipped.cooldown")
                .description("Automatic merge triggers skipped because the shard is cooling down")
                .register(registry);
        this.mergedGenerations = Counter.builder("rollout.merge.generations")
                .description("Generations folded into the base table")
                .register(registry);
        // One value per instance: the sum over its tasks (each task owns the shards of one events partition).
        Gauge.builder("rollout.merge.backlog.generations", backlogByTask, tasks -> tasks.values().stream()
                        .mapToLong(Long::longValue)
                        .sum())
                .description("Pending generations known to this merge-worker, over all its tasks")
                .register(registry);
    }

    /** trigger: count | time | manual | reconcile; result: success | failure | empty. */
    void pass(String trigger, String result, Duration duration) {
        registry.counter("rollout.merge.passes", "trigger", trigger, "result", result)
                .increment();
        Timer.builder("rollout.merge.pass.duration")
                .tag("trigger", trigger)
                .tag("result", result)
                .publishPercentileHistogram()
                .register(registry)
                .record(duration);
    }

    void merged(int generations) {
        mergedGenerations.increment(generations);
    }

    void cooldown() {
        cooldowns.increment();
    }

    void skippedCoolingDown() {
        skippedCoolingDown.increment();
    }

    void maintenance(String kind, String result) {
        registry.counter("rollout.maintenance.runs", "kind", kind, "result", result)
                .increment();
    }

    /** The backlog of the task of events partition {@code task}. */
    void backlog(int task, long generations) {
        backlogByTask.put(task, generations);
    }

    /** The task moved to another instance: its backlog is not this instance's any more. */
    void taskClosed(int task) {
        backlogByTask.remove(task);
        tableBacklogByTask.remove(task);
    }

    /**
     * The backlog of each table task {@code task} holds shards of. Two gauges per table series (capped by
     * rollout.metrics.tables.max, the rest under table=_other): the most pending generations of any one shard, so an
     * alert names the table whose merges fall behind (the unlabelled histogram of pending generations stays as it
     * is), and the shards cooling down.
     */
    void tableBacklog(int task, Map<String, TableBacklog> byTable) {
        tableBacklogByTask.put(task, Map.copyOf(byTable));
        for (String table : byTable.keySet()) {
            String tag = tableSeries.tag(table);
            if (tableBacklogTags.add(tag)) {
                Gauge.builder("rollout.merge.table.pending.generations", () -> tableBacklog(tag, false))
                        .description("Pending generations of the table's shard with the most, as this merge-worker"
                                + " knows them (tables past rollout.metrics.tables.max: the most of any under _other)")
                        .tag("table", tag)
                        .register(registry);
                Gauge.builder("rollout.merge.table.cooling.shards", () -> tableBacklog(tag, true))
                        .description("Shards of the table whose merges are cooling down after repeated failures")
                        .tag("table", tag)
                        .register(registry);
            }
        }
    }

    private double tableBacklog(String tag, boolean cooling) {
        long value = 0;
        for (Map<String, TableBacklog> tables : tableBacklogByTask.values()) {
            for (Map.Entry<String, TableBacklog> table : tables.entrySet()) {
                if (tableSeries.tag(table.getKey()).equals(tag)) {
                    value = cooling
                            ? value + table.getValue().coolingShards()
                            : Math.max(value, table.getValue().maxPending());
                }
            }
        }
        return value;
    }

    /** Rows a merge pass committed into a table's base (its table's series, or table=_other past the cap). */
    void tableRows(String table, long rows) {
        tableRows
                .computeIfAbsent(table, t -> Counter.builder("rollout.merge.table.rows")
                        .description("Rows merged into each table's base; tables past rollout.metrics.tables.max share"
                                + " table=_other")
                        .tag("table", tableSeries.tag(t))
                        .register(registry))
                .increment(rows);
    }
}
