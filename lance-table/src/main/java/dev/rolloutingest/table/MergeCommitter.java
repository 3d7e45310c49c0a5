package dev.rolloutingest.table;

import dev.rolloutingest.table.MergeRound.CommitStage;
import dev.rolloutingest.table.MergeRound.Path;
import dev.rolloutingest.table.MergeRound.PreparedMerge;
import dev.rolloutingest.table.MergeRound.RoundResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.memwal.MergedGeneration;
import org.lance.merge.MergeInsertParams;
import org.lance.merge.MergeInsertResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The serial step of a merge round: commits prepared shards, as few Lance commits as fit the merge memory pool,
 * re-reading each shard's watermark first (a shard merged meanwhile by another committer is left out); a commit
 * that fails is split in halves down to the shard at fault.
 *
 * <p>Over 300 lines because a commit's order is one story read top to bottom: groups, the watermark check, the
 * append, the deletes, the merge-insert with the marks, and the halving on failure.
 */
final class MergeCommitter {
    private static final Logger log = LoggerFactory.getLogger(MergeCommitter.class);

    private final LanceIo lance;
    private final TableSettings settings;
    private final BaseKeys keys;
    private final MergeMeters meters;
    private final MergePreparer preparer;
    private final RoundAppend append;
    private final RoundDeletes deleter;
    private volatile Consumer<CommitStage> commitFault = stage -> {};

    MergeCommitter(
            LanceIo lance,
            ObjectStore store,
            TableSettings settings,
            BaseKeys keys,
            MergeMeters meters,
            MergePreparer preparer) {
        this.lance = lance;
        this.settings = settings;
        this.keys = keys;
        this.meters = meters;
        this.preparer = preparer;
        this.append = new RoundAppend(lance, store, settings, keys, meters, preparer);
        this.deleter = new RoundDeletes(lance, meters);
    }

    /** Fails the next commits at a stage, as a crash there would (tests only); null restores. */
    void injectCommitFault(Consumer<CommitStage> fault) {
        this.commitFault = fault == null ? stage -> {} : fault;
    }

    /**
     * Commits the prepared shards, as one merge-insert when it can. Returns each shard's result or error;
     * closes the prepared merges.
     */
    RoundResult commit(List<PreparedMerge> prepared) {
        long started = System.nanoTime();
        Map<String, MergeResult> merged = new LinkedHashMap<>();
        Map<String, RuntimeException> failed = new LinkedHashMap<>();
        int[] commits = {0};
        try {
            List<PreparedMerge> work = new ArrayList<>();
            for (PreparedMerge p : prepared) {
                if (p.plan().generations().isEmpty()) {
                    merged.put(
                            p.plan().shard(),
                            MergeResult.nothing(p.plan().shard(), p.plan().watermark()));
                } else {
                    work.add(p);
                }
            }
            MergeSource.resolveAcross(work.stream().map(PreparedMerge::source).toList());
            for (List<PreparedMerge> group : commitGroups(work, MergeMemory.commitBudgetBytes())) {
                commitGroup(group, merged, failed, commits);
            }
        } finally {
            prepared.forEach(PreparedMerge::close);
        }
        Duration total = Duration.ofNanos(System.nanoTime() - started);
        return new RoundResult(merged, failed, commits[0], total);
    }

    /**
     * The round cut into commits whose sources fit lance-core's merge memory pool (see {@link MergeMemory}):
     * one commit when they all fit, as they do with the default budgets; a shard over the budget alone.
     */
    static List<List<PreparedMerge>> commitGroups(List<PreparedMerge> work, long budgetBytes) {
        List<List<PreparedMerge>> groups = new ArrayList<>();
        List<PreparedMerge> current = new ArrayList<>();
        long bytes = 0;
        for (PreparedMerge p : work) {
            if (!current.isEmpty() && bytes + p.memoryBytes() > budgetBytes) {
                groups.add(current);
                current = new ArrayList<>();
                bytes = 0;
            }
            current.add(p);
            bytes += p.memoryBytes();
        }
        if (!current.isEmpty()) {
            groups.add(current);
        }
        return groups;
    }

    private void commitGroup(
            List<PreparedMerge> group,
            Map<String, MergeResult> merged,
            Map<String, RuntimeException> failed,
            int[] commits) {
        if (group.isEmpty()) {
            return;
        }
        long started = System.nanoTime();
        Map<String, Long> watermarks;
        Dataset base;
        try {
            base = lance.openBase();
            watermarks = MemWalWatermarks.read(base);
        } catch (Exception e) {
            // The table cannot be read at all: nothing any shard did; all fail alike, none is blamed alone.
            RolloutTableException unavailable =
                    new RolloutTableException.Unavailable(lance.location().uri(), "committing a merge", e);
            group.forEach(p -> failed.put(p.plan().shard(), unavailable));
            return;
        }
        try (Dataset opened = base) {
            List<PreparedMerge> current = new ArrayList<>();
            for (PreparedMerge p : group) {
                long now = watermarks.getOrDefault(p.plan().shard(), 0L);
                if (now != p.plan().watermark()) {
                    // Merged meanwhile by another committer: the next round plans it afresh.
                    log.info(
                            "Table {} shard {}: watermark moved from {} to {} since the plan; left for the next round",
                            lance.location(),
                            p.plan().shard(),
                            p.plan().watermark(),
                            now);
                    merged.put(p.plan().shard(), MergeResult.nothing(p.plan().shard(), now));
                } else {
                    current.add(p);
                }
            }
            if (current.isEmpty()) {
                return;
            }
            try {
                commitOnce(opened, current);
                commits[0]++;
                Duration commit = Duration.ofNanos(System.nanoTime() - started);
                meters.commitPhase.record(commit);
                for (PreparedMerge p : current) {
                    MergeResult result = p.result(commit);
                    merged.put(p.plan().shard(), result);
                    log.info(
                            "Table {} shard {}: merged {} generations ({}..{}), {} rows, watermark {} -> {}, read {} ms,"
                                    + " round commit of {} shards {} ms, {} left",
                            lance.location(),
                            p.plan().shard(),
                            result.mergedGenerations().size(),
                            result.mergedGenerations().get(0),
                            result.newWatermark(),
                            result.rows(),
                            result.previousWatermark(),
                            result.newWatermark(),
                            result.readDuration().toMillis(),
                            current.size(),
                            commit.toMillis(),
                            result.leftover());
                }
            } catch (RoundAppend.WatermarkMoved moved) {
                // nothing of this commit landed; planned again, the shards merged meanwhile are left out
                log.info("{}; committing the group again", moved.getMessage());
                commitGroup(current, merged, failed, commits);
            } catch (Exception thrown) {
                RuntimeException e = LanceIo.unchecked(thrown); // mergeInsert's IOExceptions are undeclared
                commits[0]++;
                if (current.size() == 1) {
                    PreparedMerge alone = current.get(0);
                    failed.put(
                            alone.plan().shard(),
                            MergeMemory.exhausted(e)
                                    ? new RolloutTableException(
                                            "Table "
                                                    + lance.location() + " shard "
                                                    + alone.plan().shard() + ": a merge of " + alone.rows()
                                                    + " rows (" + alone.memoryBytes()
                                                    + " bytes in memory) ran out of lance-core's merge memory"
                                                    + " pool (" + MergeMemory.POOL_ENV + " = " + MergeMemory.poolBytes()
                                                    + "); lower"
                                                    + " rollout.merge.max.bytes or raise " + MergeMemory.POOL_ENV,
                                            e)
                                    : e);
                    return;
                }
                log.warn(
                        "Table {}: a merge commit of {} shards failed ({}); committing them in halves to find the shard"
                                + " at fault",
                        lance.location(),
                        current.size(),
                        e.getMessage());
                int half = current.size() / 2;
                commitGroup(current.subList(0, half), merged, failed, commits);
                commitGroup(current.subList(half, current.size()), merged, failed, commits);
            }
        }
    }

    /**
     * Rows per sorted source batch: about 8 record_id index pages (4,096 keys each) of the base's key range
     * per batch, between 256 and 8,192 rows (a 10k-row base takes the whole source in one batch).
     */
    static int chunkRows(int sourceRows, long baseRows) {
        return (int) Math.max(256, Math.min(8192, sourceRows * 32_768L / Math.max(1, baseRows)));
    }

    /**
     * One commit of a group, in two Lance commits when some keys are new: first the rows whose keys the base
     * certainly lacks, appended ({@link NewKeyAppend}); then one merge-insert of the rest (keys the base may
     * hold: usually none) that also marks every generation of the group merged. Between the two, and after a
     * crash between them, the appended rows are both in the base and in their still-pending generations, the same
     * rows, which reads return once; the next round merges those generations again, finds their keys in the base
     * and joins them (a row replaces an equal one only when newer, so nothing changes) before marking them.
     */
    private void commitOnce(Dataset base, List<PreparedMerge> group) {
        List<MergedGeneration> marks = new ArrayList<>();
        for (PreparedMerge p : group) {
            p.plan()
                    .generations()
                    .forEach(g -> marks.add(new MergedGeneration(p.plan().shard(), g.generation())));
        }
        long started = System.nanoTime();
        List<MergeSource.Row> rows = new ArrayList<>();
        List<MergeSource.Row> deletes = new ArrayList<>();
        for (MergeSource.Row row :
                MergeSource.keptRows(group.stream().map(PreparedMerge::source).toList())) {
            (row.isTombstone() ? deletes : rows).add(row);
        }
        Dataset target = base;
        Dataset appended = null;
        RoundAppend.Appended result = null;
        try {
            List<MergeSource.Row> join = rows;
            if (settings.mergeAppendNewKeys() && !rows.isEmpty()) {
                Map<String, Long> planned = new LinkedHashMap<>();
                group.forEach(p -> planned.put(p.plan().shard(), p.plan().watermark()));
                result = append.appendNewKeys(base, rows, marks, planned);
                appended = result.committed();
                join = result.join();
                if (appended != null) {
                    target = appended;
                }
                if (result.appendedRows()) {
                    commitFault.accept(CommitStage.APPENDED);
                }
            }
            if (!deletes.isEmpty()) {
                Dataset deleted = deleter.applyDeletes(deletes);
                if (appended != null) {
                    appended.close();
                }
                appended = deleted;
                target = deleted;
            }
            long joinStarted = System.nanoTime();
            long baseRows = target.countRows();
            MergeJoin how = MergeJoin.forCommit(join.size(), baseRows, settings.mergeScanJoinMaxBaseRows());
            MergeInsertParams params =
                    how.params().markGenerationsAsMerged(marks).withConflictRetries(settings.mergeConflictRetries());
            Schema table = AddedColumns.tableSchema(target.getSchema());
            List<VectorSchemaRoot> batches = new ArrayList<>(MergeSource.chunks(
                    MergeSource.sortedByKey(preparer.withAllColumns(join)),
                    chunkRows(join.size(), baseRows),
                    table,
                    lance.allocator()));
            if (batches.isEmpty()) {
                batches.add(emptyBatch(table)); // the marks alone: a source with the schema and no rows
            }
            try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(lance.allocator())) {
                batches.forEach(lance::checkWriteFault);
                Data.exportArrayStream(lance.allocator(), new BatchReader(lance.allocator(), batches), stream);
                MergeInsertResult inserted = target.mergeInsert(params, stream);
                inserted.dataset().close();
                meters.commitsByJoin.get(how).increment();
                meters.rowsByPath.get(Path.JOIN).increment(join.size());
                keys.mayHaveInserted(join.stream().map(MergeSource.Row::hash).toList());
            } finally {
                batches.forEach(VectorSchemaRoot::close);
            }
            commitFault.accept(CommitStage.MARKED);
            log.info(
                    "Table {}: commit of {} generations of {} shards: {} rows appended ({} in {} adopted generations) in"
                            + " {} ms, {} rows joined ({}) with the marks in {} ms",
                    lance.location(),
                    marks.size(),
                    group.size(),
                    rows.size() - join.size(),
                    result == null ? 0 : result.adoptedRows(),
                    result == null ? 0 : result.adoptedGenerations(),
                    (joinStarted - started) / 1_000_000,
                    join.size(),
                    how.tag(),
                    (System.nanoTime() - joinStarted) / 1_000_000);
        } finally {
            if (appended != null) {
                appended.close();
            }
        }
    }

    private VectorSchemaRoot emptyBatch(Schema table) {
        VectorSchemaRoot empty = VectorSchemaRoot.create(table, lance.allocator());
        empty.allocateNew();
        empty.setRowCount(0);
        return empty;
    }

    static String describe(List<MergedGeneration> marks) {
        return marks.size() + " generations of "
                + marks.stream().map(MergedGeneration::shardId).distinct().count() + " shards";
    }
}
