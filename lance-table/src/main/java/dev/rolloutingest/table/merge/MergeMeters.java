package dev.rolloutingest.table.merge;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The meters of merge rounds, registered once per table: phases, commits by join, rows by path, deletes. */
final class MergeMeters {
    final Timer readPhase;
    final Timer commitPhase;
    final Timer appendPhase;
    final Counter appendsPreempted;
    final Counter adoptionsOverFragments;
    final Counter generationsReread;
    final Counter falsePositives;
    final Map<MergeJoin, Counter> commitsByJoin = new EnumMap<>(MergeJoin.class);
    final Map<MergePath, Counter> rowsByPath = new EnumMap<>(MergePath.class);
    final Map<String, Counter> deletesByResult = new HashMap<>();

    private final MeterRegistry registry;

    MergeMeters(MeterRegistry meters) {
        this.registry = meters;
        this.appendPhase = Timer.builder("rollout.merge.phase")
                .tag("phase", "append")
                .description("Time of a merge's phases: reading one shard's generations, committing a round")
                .register(meters);
        this.appendsPreempted = Counter.builder("rollout.merge.append.preempted")
                .description("Appends of new keys refused because another data commit landed first (then the keys"
                        + " are checked again)")
                .register(meters);
        this.adoptionsOverFragments = Counter.builder("rollout.merge.adopt.over.fragments")
                .description("Generations of new keys written instead of adopted whole because the base held"
                        + " rollout.merge.adopt.max.base.fragments fragments already (a compaction brings the count"
                        + " down; until then their rows cost a full read and write)")
                .register(meters);
        this.generationsReread = Counter.builder("rollout.merge.generations.reread")
                .description("Generations read by their keys alone to be adopted whole, then read again in full by"
                        + " the commit, which could not adopt them (a row of an older value, the base at its fragment"
                        + " cap): a second read on the table's commit lane")
                .register(meters);
        this.falsePositives = Counter.builder("rollout.merge.key.filter.false.positives")
                .description("Keys the merge committer's filter could not rule out that the base did not hold (checked"
                        + " exactly through the record_id index, then appended)")
                .register(meters);
        for (String result : List.of("applied", "no-op")) {
            deletesByResult.put(
                    result,
                    Counter.builder("rollout.merge.deletes")
                            .tag("result", result)
                            .description("Deletes merged: applied (a live base value replaced by the delete) or no-op"
                                    + " (no live value of the key was in the base, or its base value was newer); either"
                                    + " way the delete stays in the base as a row until no older value can merge")
                            .register(meters));
        }
        for (MergePath path : MergePath.values()) {
            rowsByPath.put(
                    path,
                    Counter.builder("rollout.merge.rows")
                            .tag("path", path.name().toLowerCase(Locale.ROOT))
                            .description("Merged rows by path: append (keys the base lacked, written as new"
                                    + " fragments), adopt (whole generations of such keys whose data files became base"
                                    + " fragments unwritten), join (written in place of an older base row of the key)"
                                    + " or superseded (the base held the key as new or newer already)")
                            .register(meters));
        }
        this.readPhase = Timer.builder("rollout.merge.phase")
                .tag("phase", "read")
                .description("Time of a merge's phases: reading one shard's generations, committing a round")
                .register(meters);
        this.commitPhase = Timer.builder("rollout.merge.phase")
                .tag("phase", "commit")
                .description("Time of a merge's phases: reading one shard's generations, committing a round")
                .register(meters);
        for (MergeJoin join : MergeJoin.values()) {
            commitsByJoin.put(
                    join,
                    Counter.builder("rollout.merge.join.commits")
                            .tag("join", join.tag())
                            .description("Merge commits by how they found the base rows of the keys the key filter"
                                    + " could not rule out: scan (a base within rollout.merge.scan.join.max.base.rows)"
                                    + " or the record_id index")
                            .register(meters));
        }
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
}
