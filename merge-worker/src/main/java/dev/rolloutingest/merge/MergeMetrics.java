package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.TableSeries;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Map;
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

    /** One round: shards in it, commits it took (1 unless a shard failed), commit and prepare time. */
    void round(int shards, int commits, Duration commit, Duration prepare) {
        registry.counter("rollout.merge.rounds").increment();
        registry.counter("rollout.merge.commits").increment(commits);
        DistributionSummary.builder("rollout.merge.round.shards")
                .description("Shards folded by one merge round")
                .serviceLevelObjectives(1, 2, 4, 8, 16, 32, 64, 128, 256)
                .register(registry)
                .record(shards);
        Timer.builder("rollout.merge.round.commit")
                .description("Time to commit one merge round (all its shards)")
                .publishPercentileHistogram()
                .register(registry)
                .record(commit);
        Timer.builder("rollout.merge.round.prepare")
                .description("Time to read and de-duplicate one round's shards")
                .publishPercentileHistogram()
                .register(registry)
                .record(prepare);
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
