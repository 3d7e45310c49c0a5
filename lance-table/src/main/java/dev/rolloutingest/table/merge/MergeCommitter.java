package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.MemoryBudget;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.lance.Dataset;
import org.lance.memwal.MergedGeneration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The serial step of a merge round: commits prepared shards, as few Lance commits as fit the merge memory pool,
 * re-reading each shard's watermark first (a shard merged meanwhile by another committer is left out); a commit
 * that fails is split in halves down to the shard at fault.
 *
 * <p>Over 300 lines because a commit's order is one story read top to bottom: groups, the watermark check, the
 * append, the deletes, the marks, and the halving on failure.
 */
public final class MergeCommitter {
    private static final Logger log = LoggerFactory.getLogger(MergeCommitter.class);

    private final LanceIo lance;
    private final TableSettings settings;
    private final MergeMeters meters;
    private final RoundWrite writer;
    private volatile Consumer<CommitStage> commitFault = stage -> {};

    MergeCommitter(
            LanceIo lance,
            ObjectStore store,
            GenerationCatalog catalog,
            TableSettings settings,
            BaseKeys keys,
            KeyAddresses addresses,
            BaseKeys deletedKeys,
            MergeMeters meters,
            AdoptionRoom room) {
        this.lance = lance;
        this.settings = settings;
        this.meters = meters;
        this.writer = new RoundWrite(lance, store, catalog, settings, keys, addresses, deletedKeys, meters, room);
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
        MemoryBudget source = MergeMemory.commitBudget(budgetBytes);
        for (PreparedMerge p : work) {
            if (!source.tryAdmit(p.memoryBytes())) {
                if (!current.isEmpty()) {
                    groups.add(current);
                    current = new ArrayList<>();
                    source = MergeMemory.commitBudget(budgetBytes);
                }
                // the first of a commit goes in whatever its size: over the budget alone, it fails alone
                source.count(p.memoryBytes());
            }
            current.add(p);
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
            } catch (RoundWrite.WatermarkMoved moved) {
                // nothing of this commit landed; planned again, the shards merged meanwhile are left out
                log.info("{}; committing the group again", moved.getMessage());
                commitGroup(current, merged, failed, commits);
            } catch (RolloutTableException.Contended contended) {
                // other commits kept landing first: no shard's fault, the next round tries them all again
                commits[0]++;
                current.forEach(p -> failed.put(p.plan().shard(), contended));
            } catch (Exception thrown) {
                RuntimeException e = LanceIo.unchecked(thrown); // lance-core's IOExceptions are undeclared
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
     * One commit of a group, in two Lance commits: first the rows ({@link RoundWrite}: new keys appended, rows that
     * replace older base rows written with those marked deleted, deletes as rows; fenced, so it lands only on the
     * version it was checked against); then the marks' commit that raises the watermarks of the group's shards to
     * their last generation merged ({@link MemWalWatermarks#mark}: a watermark is the higher of the two, so marking
     * again what another committer marked changes nothing). Between the two, and after a crash between them, the rows are
     * both in the base and in their still-pending generations, the same rows, which reads return once; the next round
     * merges those generations again, finds every row already in the base (equal, not newer) and only marks them.
     */
    private void commitOnce(Dataset base, List<PreparedMerge> group) {
        List<MergedGeneration> marks = new ArrayList<>();
        for (PreparedMerge p : group) {
            p.plan()
                    .generations()
                    .forEach(g -> marks.add(new MergedGeneration(p.plan().shard(), g.generation())));
        }
        long started = System.nanoTime();
        List<MergeSource.Row> rows =
                MergeSource.keptRows(group.stream().map(PreparedMerge::source).toList());
        Map<String, Long> planned = new LinkedHashMap<>();
        group.forEach(p -> planned.put(p.plan().shard(), p.plan().watermark()));
        RoundWrite.Written written = writer.commit(base, rows, marks, planned, commitFault);
        Dataset target = written.committed() != null ? written.committed() : base;
        try {
            if (written.committed() != null) {
                commitFault.accept(CommitStage.APPENDED);
            }
            long marksStarted = System.nanoTime();
            writer.marked(MemWalWatermarks.mark(target, marks, settings.mergeConflictRetries()));
            commitFault.accept(CommitStage.MARKED);
            log.info(
                    "Table {}: commit of {} generations of {} shards: {} rows appended and {} replacing {} older base"
                            + " rows ({} of them in {} adopted generations), {} older than the base's dropped, in {} ms"
                            + " (checked against the base in {} ms); marks in {} ms",
                    lance.location(),
                    marks.size(),
                    group.size(),
                    written.appendedRows(),
                    written.joinedRows(),
                    written.replacedRows(),
                    written.adoptedRows(),
                    written.adoptedGenerations(),
                    written.droppedRows(),
                    (marksStarted - started) / 1_000_000,
                    written.checked().toMillis(),
                    (System.nanoTime() - marksStarted) / 1_000_000);
        } finally {
            if (written.committed() != null) {
                written.committed().close();
            }
        }
    }
}
