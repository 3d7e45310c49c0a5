package dev.rolloutingest.table;

import dev.rolloutingest.table.MergeRound.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.memwal.MergedGeneration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first of a commit's two Lance commits: the rows whose keys the base certainly lacks (the committer's key
 * filter, its maybes checked exactly) appended as new fragments, whole generations of them adopted; refused when
 * another data commit lands first, then split again against the newer base, up to the merge's conflict retries.
 */
final class RoundAppend {
    private static final Logger log = LoggerFactory.getLogger(RoundAppend.class);

    private final LanceIo lance;
    private final ObjectStore store;
    private final TableSettings settings;
    private final BaseKeys keys;
    private final MergeMeters meters;
    private final MergePreparer preparer;

    RoundAppend(
            LanceIo lance,
            ObjectStore store,
            TableSettings settings,
            BaseKeys keys,
            MergeMeters meters,
            MergePreparer preparer) {
        this.lance = lance;
        this.store = store;
        this.settings = settings;
        this.keys = keys;
        this.meters = meters;
        this.preparer = preparer;
    }

    /** What the append left for the join, and the version it committed (null when it appended nothing). */
    record Appended(
            List<MergeSource.Row> join,
            Dataset committed,
            boolean appendedRows,
            long adoptedRows,
            int adoptedGenerations) {}

    /**
     * Appends the rows the base certainly lacks. The key filter is caught up to the base the commit reads; when
     * another data commit lands first, the append is refused, the filter catches up to the newer base and the
     * split is made again, up to the merge's conflict retries; after that every row goes to the join.
     */
    Appended appendNewKeys(
            Dataset base, List<MergeSource.Row> rows, List<MergedGeneration> marks, Map<String, Long> planned) {
        Dataset current = base;
        try {
            for (int attempt = 0; attempt <= settings.mergeConflictRetries(); attempt++) {
                List<Fragment> fragments = current.getFragments();
                keys.catchUp(current, fragments);
                List<MergeSource.Row> append = new ArrayList<>();
                List<MergeSource.Row> maybe = new ArrayList<>();
                for (MergeSource.Row row : rows) {
                    (keys.mightHold(row.hash()) ? maybe : append).add(row);
                }
                List<MergeSource.Row> join = maybe;
                if (!maybe.isEmpty() && maybe.size() <= BaseKeys.MAX_EXACT_CHECKS) {
                    // the filter's maybes checked exactly: a false positive (0.1 % of new keys) would otherwise
                    // take a join and keep its whole generation from being adopted
                    Set<String> held = BaseKeys.heldBy(
                            current,
                            maybe.stream().map(MergeSource.Row::keyString).toList());
                    join = new ArrayList<>();
                    for (MergeSource.Row row : maybe) {
                        (held.contains(row.keyString()) ? join : append).add(row);
                    }
                    meters.falsePositives.increment(maybe.size() - join.size());
                }
                if (append.isEmpty()) {
                    return new Appended(join, current == base ? null : current, false, 0, 0);
                }
                long started = System.nanoTime();
                if (lance.hasWriteFault()) {
                    List<VectorSchemaRoot> checked = MergeSource.slices(
                            preparer.withAllColumns(append),
                            AddedColumns.tableSchema(current.getSchema()),
                            lance.allocator());
                    try {
                        checked.forEach(lance::checkWriteFault);
                    } finally {
                        checked.forEach(VectorSchemaRoot::close);
                    }
                }
                GenerationAdoption.Split split = settings.mergeAdoptGenerations()
                        ? GenerationAdoption.split(
                                append, GenerationAdoption.schemaOf(current), settings.mergeAdoptMinRows())
                        : new GenerationAdoption.Split(List.of(), append);
                Schema table = AddedColumns.tableSchema(current.getSchema());
                List<MergeSource.Row> written = new ArrayList<>(preparer.withAllColumns(split.rows()));
                List<VectorSchemaRoot> batches = new ArrayList<>(MergeSource.slices(written, table, lance.allocator()));
                try {
                    GenerationAdoption.Linked adopted = GenerationAdoption.link(store, split.adopt());
                    try {
                        List<MergeSource.Row> notLinked = new ArrayList<>();
                        for (MergeSource.Row row : append) {
                            if (adopted.failed().contains(row.source().spanOf(row.ordinal()))) {
                                notLinked.add(row);
                            }
                        }
                        if (!notLinked.isEmpty()) {
                            notLinked = preparer.withAllColumns(notLinked);
                            written.addAll(notLinked);
                            batches.addAll(MergeSource.slices(notLinked, table, lance.allocator()));
                        }
                    } catch (RuntimeException e) {
                        GenerationAdoption.unlink(store, adopted);
                        throw e;
                    }
                    NewKeyAppend.Committed result = NewKeyAppend.commit(
                            lance,
                            store,
                            current,
                            fragments,
                            batches,
                            adopted,
                            keys.firstUnseenId(),
                            Map.of("rollout.merge.append", MergeCommitter.describe(marks)));
                    Dataset committed = result.dataset();
                    keys.appended(
                            result.fragmentIds(),
                            append.stream().map(MergeSource.Row::hash).toList());
                    meters.appendPhase.record(Duration.ofNanos(System.nanoTime() - started));
                    meters.rowsByPath.get(Path.APPEND).increment(written.size());
                    meters.rowsByPath.get(Path.ADOPT).increment(adopted.rows());
                    if (current != base) {
                        current.close();
                    }
                    return new Appended(
                            join,
                            committed,
                            true,
                            adopted.rows(),
                            adopted.fragments().size());
                } catch (NewKeyAppend.Preempted e) {
                    meters.appendsPreempted.increment();
                    log.info("{}; checking the keys again on the newer base", e.getMessage());
                    if (current != base) {
                        current.close();
                    }
                    current = lance.openBase();
                    requireWatermarks(current, planned);
                } finally {
                    batches.forEach(VectorSchemaRoot::close);
                }
            }
            log.warn(
                    "Table {}: appends of new keys were preempted {} times in a row; this commit joins all its rows",
                    lance.location(),
                    settings.mergeConflictRetries() + 1);
            return new Appended(rows, current == base ? null : current, false, 0, 0);
        } catch (RuntimeException e) {
            if (current != base) {
                current.close();
            }
            throw e;
        }
    }

    /** Thrown when a shard of the commit was merged by another committer while its append was being retried. */
    static final class WatermarkMoved extends RuntimeException {
        WatermarkMoved(String message) {
            super(message);
        }
    }

    /** After a preempted append: the newer base must still have every shard at its planned watermark. */
    private void requireWatermarks(Dataset base, Map<String, Long> planned) {
        Map<String, Long> now = MemWalWatermarks.read(base);
        for (Map.Entry<String, Long> shard : planned.entrySet()) {
            long watermark = now.getOrDefault(shard.getKey(), 0L);
            if (watermark != shard.getValue()) {
                throw new WatermarkMoved("Table " + lance.location() + " shard " + shard.getKey() + ": watermark moved"
                        + " from " + shard.getValue() + " to " + watermark + " while an append was retried");
            }
        }
    }
}
