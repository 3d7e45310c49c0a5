package dev.rolloutingest.table;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.lance.memwal.MergedGeneration;
import org.lance.merge.MergeInsertParams;
import org.lance.merge.MergeInsertResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Merging in rounds: the pending generations of many shards folded into the base in one merge-insert
 * commit that marks all of them merged. Three steps, so the caller can run the slow part in parallel and
 * the commit alone: {@link #plan} (one look at the watermarks and the seals), {@link #prepare} (read and
 * de-duplicate one shard's generations; any thread, memory = that shard's rows), {@link #commit} (serial).
 *
 * <p>Per shard the guarantees of a single pass hold: at most N consecutive generations above its watermark,
 * ascending, within a byte budget (the oldest always, so a large one cannot block its shard); the
 * watermark is read again right before the commit and a shard whose watermark moved since its plan
 * (another committer merged it) is left out, so nothing is merged twice or out of order (lance-core 7.0.0
 * accepts both silently and then overwrites newer data). A commit that fails is split in halves down to the
 * shard at fault, so one poisoned shard never fails the healthy ones; when the table itself cannot be read,
 * every shard of the round fails as unavailable instead.
 */
public final class MergeRound {
    private static final Logger log = LoggerFactory.getLogger(MergeRound.class);

    /**
     * Where a merged row went: appended as a new key (written again), adopted with its whole generation (its data
     * files linked, not written), or joined to the base by the merge-insert.
     */
    public enum Path {
        APPEND,
        ADOPT,
        JOIN
    }

    /** The points of a commit a test can fail at, as a crash there would. */
    public enum CommitStage {
        /** The new keys are appended; the merge-insert with the marks has not run. */
        APPENDED,
        /** The merge-insert with the marks committed. */
        MARKED
    }

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;
    private final TableSettings settings;
    private final BaseKeys keys;
    private final Timer readPhase;
    private final Timer commitPhase;
    private final Timer appendPhase;
    private final Counter appendsPreempted;
    private final Counter falsePositives;
    private final Map<MergeJoin, Counter> commitsByJoin = new EnumMap<>(MergeJoin.class);
    private final Map<Path, Counter> rowsByPath = new EnumMap<>(Path.class);
    private final Map<String, Counter> deletesByResult = new HashMap<>();
    private volatile Consumer<CommitStage> commitFault = stage -> {};

    MergeRound(
            LanceIo lance, ObjectStore store, GenerationCatalog catalog, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.store = store;
        this.catalog = catalog;
        this.settings = settings;
        this.keys = new BaseKeys(lance, meters);
        this.appendPhase = Timer.builder("rollout.merge.phase")
                .tag("phase", "append")
                .description("Time of a merge's phases: reading one shard's generations, committing a round")
                .register(meters);
        this.appendsPreempted = Counter.builder("rollout.merge.append.preempted")
                .description("Appends of new keys refused because another data commit landed first (then the keys"
                        + " are checked again)")
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
                            .description("Deletes merged: applied (a base row removed) or no-op (the key was not in"
                                    + " the base, or its base value was newer than the delete)")
                            .register(meters));
        }
        for (Path path : Path.values()) {
            rowsByPath.put(
                    path,
                    Counter.builder("rollout.merge.rows")
                            .tag("path", path.name().toLowerCase(Locale.ROOT))
                            .description("Merged rows by path: append (keys the base certainly lacked, written as new"
                                    + " fragments), adopt (whole generations of such keys whose data files became base"
                                    + " fragments unwritten) or join (keys it may hold, through the merge-insert)")
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
                            .description("Merge-insert commits by how they joined the source to the base: scan (a"
                                    + " base within rollout.merge.scan.join.max.base.rows) or the record_id index")
                            .register(meters));
        }
    }

    /**
     * What each shard would merge now: one base open for the watermarks, one listing for the seals, and
     * the seal files of the chosen generations.
     *
     * @param maxGenerations per shard, 0 = unbounded
     * @param maxBytes per shard, 0 = unbounded (the oldest pending generation is always taken)
     * @param upTo the highest generation a plan may take (unsigned; -1 = any)
     */
    List<MergePlan> plan(Collection<String> shards, int maxGenerations, long maxBytes, long upTo) {
        if (maxGenerations < 0 || maxBytes < 0) {
            throw new IllegalArgumentException("maxGenerations and maxBytes must be >= 0");
        }
        Map<String, Long> watermarks;
        Map<String, List<GenerationCatalog.Listed>> sealed;
        try (Dataset base = lance.openBase()) {
            watermarks = MemWalWatermarks.read(base);
            sealed = catalog.sealedByShard();
        } catch (Exception e) {
            throw new RolloutTableException.Unavailable(lance.location().uri(), "planning a merge", e);
        }
        List<MergePlan> plans = new ArrayList<>();
        for (String shard : shards) {
            ShardId.requireValid(shard);
            long watermark = watermarks.getOrDefault(shard, 0L);
            List<GenerationCatalog.Listed> pending = sealed.getOrDefault(shard, List.of()).stream()
                    .filter(g -> Long.compareUnsigned(g.generation(), watermark) > 0)
                    .toList();
            int beyondBound = (int) pending.stream()
                    .filter(g -> Long.compareUnsigned(g.generation(), upTo) > 0)
                    .count();
            pending = pending.subList(0, pending.size() - beyondBound); // ascending: those beyond come last
            List<SealedGeneration> chosen = new ArrayList<>();
            long bytes = 0;
            RuntimeException failure = null;
            for (GenerationCatalog.Listed listed : pending) {
                if (maxGenerations > 0 && chosen.size() >= maxGenerations) {
                    break;
                }
                SealedGeneration seal;
                try {
                    seal = catalog.seal(listed);
                } catch (RuntimeException e) {
                    failure = e; // this shard's seal is unreadable: its problem, not the round's
                    break;
                }
                if (!chosen.isEmpty() && maxBytes > 0 && bytes + seal.bytes() > maxBytes) {
                    break;
                }
                chosen.add(seal);
                bytes += seal.bytes();
            }
            plans.add(new MergePlan(
                    shard, watermark, chosen, bytes, pending.size() + beyondBound - chosen.size(), failure));
        }
        return plans;
    }

    /**
     * A generation with at most 1/this of its keys maybe in the base is likely all new: 0.4 %, above the key
     * filter's false positives (0.1 % a layer). More, and they are likely real updates, so the generation is read
     * in full here, on the prepare threads, rather than on the commit thread (a 1 % mix read there doubled a round).
     */
    private static final int LIKELY_NEW_MAYBES = 250;

    /**
     * Reads a plan's generations, ascending, newest row per key; safe on any thread. Every generation's keys and
     * provenance are read first; a generation the merge will likely adopt whole (all its rows kept, its keys ruled
     * out by the committer's filter as it stands but for a few false positives) stays at that, the others are read in full. The commit reads in
     * full whatever it cannot adopt after all.
     */
    PreparedMerge prepare(MergePlan plan) {
        if (plan.failure() != null) {
            throw plan.failure();
        }
        long started = System.nanoTime();
        MergeSource source = new MergeSource();
        try {
            Set<SealedGeneration> byKeys = Collections.newSetFromMap(new IdentityHashMap<>());
            for (SealedGeneration generation : plan.generations()) {
                // only a generation the commit may adopt is worth reading by its keys alone first
                boolean mayAdopt = settings.mergeAppendNewKeys() && generation.rows() >= settings.mergeAdoptMinRows();
                if (mayAdopt) {
                    byKeys.add(generation);
                }
                readGeneration(source, generation, mayAdopt ? MergeSource.KEY_COLUMNS : null);
            }
            if (!byKeys.isEmpty()) {
                for (MergeSource.Span span : source.spans()) {
                    if (!byKeys.contains(span.generation())) {
                        continue; // read in full already
                    }
                    // a few maybes are the filter's false positives, which the commit checks exactly
                    if (span.fragment() != null
                            && !source.anyDropped(span)
                            && !source.mayHoldDeletes(span)
                            && source.hashes(span).stream()
                                            .filter(keys::mightHold)
                                            .count()
                                    <= span.rows() / LIKELY_NEW_MAYBES) {
                        source.keepKeysOnly(span);
                    } else {
                        readFull(source, span);
                    }
                }
            }
            Duration read = Duration.ofNanos(System.nanoTime() - started);
            readPhase.record(read);
            return new PreparedMerge(plan, source, read);
        } catch (Exception e) {
            source.close();
            throw LanceIo.unchecked(e);
        }
    }

    /** Reads a generation's rows: these columns, or (null) every column it has, added ones too. */
    private void readGeneration(MergeSource source, SealedGeneration generation, List<String> columns) {
        String uri = lance.location().resolve(generation.datasetPath());
        try (Dataset dataset = lance.openGeneration(uri);
                LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(columns == null ? allColumns(dataset) : columns)
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            int first = source.size();
            while (reader.loadNextBatch()) {
                source.addAll(reader.getVectorSchemaRoot(), lance.allocator());
            }
            source.endGeneration(
                    generation, first, GenerationAdoption.fragmentOf(dataset), GenerationAdoption.schemaOf(dataset));
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw unreadable(generation, e);
        }
    }

    /** Reads a keys-only generation's rows in full, in the order its keys were read. */
    private void readFull(MergeSource source, MergeSource.Span span) {
        SealedGeneration generation = span.generation();
        try (Dataset dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
                LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(allColumns(dataset))
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            int row = 0;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                source.addFullRows(span, batch, row, lance.allocator());
                row += batch.getRowCount();
            }
            source.fullRowsRead(span);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw unreadable(generation, e);
        }
    }

    /** The contract's columns and those producers added that a generation holds. */
    private static List<String> allColumns(Dataset generation) {
        List<String> columns = new ArrayList<>(RolloutSchema.allColumns());
        columns.addAll(AddedColumns.names(generation.getSchema()));
        return columns;
    }

    private RolloutTableException unreadable(SealedGeneration generation, Exception e) {
        return new RolloutTableException.GenerationUnreadable(
                lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
    }

    /**
     * The rows with all their columns: keys-only generations among them are read in full first, and every row is
     * looked up where it sits now (a row taken before another call read its generation in full still points at
     * the keys-only batch).
     */
    private List<MergeSource.Row> withAllColumns(List<MergeSource.Row> rows) {
        for (MergeSource.Row row : rows) {
            MergeSource.Span span = row.source().spanOf(row.ordinal());
            if (row.source().isKeysOnly(span)) {
                readFull(row.source(), span);
            }
        }
        List<MergeSource.Row> current = new ArrayList<>(rows.size());
        for (MergeSource.Row row : rows) {
            current.add(row.source().row(row.ordinal()));
        }
        return current;
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
                commitPhase.record(commit);
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
            } catch (WatermarkMoved moved) {
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
        Appended result = null;
        try {
            List<MergeSource.Row> join = rows;
            if (settings.mergeAppendNewKeys() && !rows.isEmpty()) {
                Map<String, Long> planned = new LinkedHashMap<>();
                group.forEach(p -> planned.put(p.plan().shard(), p.plan().watermark()));
                result = appendNewKeys(base, rows, marks, planned);
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
                Dataset deleted = applyDeletes(deletes);
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
                    MergeSource.sortedByKey(withAllColumns(join)),
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
                commitsByJoin.get(how).increment();
                rowsByPath.get(Path.JOIN).increment(join.size());
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

    /** Deletes per lance {@code delete} commit: each key is a clause of its filter. */
    static final int DELETES_PER_COMMIT = 256;

    /**
     * Removes the base rows the round's deletes replace (older by {@link RowOrder}: a value of another partition
     * ingested later stays), before the merge-insert that marks the generations: until then the pending deletes hide
     * the keys from reads, and after a crash in between the next round deletes again, which removes nothing more.
     * Returns the base after them (the caller closes it).
     */
    private Dataset applyDeletes(List<MergeSource.Row> deletes) {
        long removed = 0;
        for (int from = 0; from < deletes.size(); from += DELETES_PER_COMMIT) {
            List<String> clauses = new ArrayList<>();
            for (MergeSource.Row row : deletes.subList(from, Math.min(deletes.size(), from + DELETES_PER_COMMIT))) {
                clauses.add("(" + RolloutSchema.RECORD_ID + " = " + LsmReader.sqlString(row.keyString()) + " AND "
                        + RowOrder.olderThan(row.partition(), row.offset(), row.ingestedAt()) + ")");
            }
            String filter = String.join(" OR ", clauses);
            try (Dataset latest = lance.openBase()) {
                long matching = latest.countRows(filter);
                if (matching > 0) {
                    latest.delete(filter);
                    removed += matching;
                }
            }
        }
        deletesByResult.get("applied").increment(removed);
        deletesByResult.get("no-op").increment(Math.max(0, deletes.size() - removed));
        log.info("Table {}: {} deletes removed {} base rows", lance.location(), deletes.size(), removed);
        return lance.openBase();
    }

    private VectorSchemaRoot emptyBatch(Schema table) {
        VectorSchemaRoot empty = VectorSchemaRoot.create(table, lance.allocator());
        empty.allocateNew();
        empty.setRowCount(0);
        return empty;
    }

    /** What the append left for the join, and the version it committed (null when it appended nothing). */
    private record Appended(
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
    private Appended appendNewKeys(
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
                    falsePositives.increment(maybe.size() - join.size());
                }
                if (append.isEmpty()) {
                    return new Appended(join, current == base ? null : current, false, 0, 0);
                }
                long started = System.nanoTime();
                if (lance.hasWriteFault()) {
                    List<VectorSchemaRoot> checked = MergeSource.slices(
                            withAllColumns(append), AddedColumns.tableSchema(current.getSchema()), lance.allocator());
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
                List<MergeSource.Row> written = new ArrayList<>(withAllColumns(split.rows()));
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
                            notLinked = withAllColumns(notLinked);
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
                            Map.of("rollout.merge.append", describe(marks)));
                    Dataset committed = result.dataset();
                    keys.appended(
                            result.fragmentIds(),
                            append.stream().map(MergeSource.Row::hash).toList());
                    appendPhase.record(Duration.ofNanos(System.nanoTime() - started));
                    rowsByPath.get(Path.APPEND).increment(written.size());
                    rowsByPath.get(Path.ADOPT).increment(adopted.rows());
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
                    appendsPreempted.increment();
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

    private static String describe(List<MergedGeneration> marks) {
        return marks.size() + " generations of "
                + marks.stream().map(MergedGeneration::shardId).distinct().count() + " shards";
    }

    /** Fails the next commits at a stage, as a crash there would (tests only); null restores. */
    void injectCommitFault(Consumer<CommitStage> fault) {
        this.commitFault = fault == null ? stage -> {} : fault;
    }

    LanceIo lance() {
        return lance;
    }

    /** The committer's filter of base keys (tests and benchmarks look at it). */
    BaseKeys baseKeys() {
        return keys;
    }

    /**
     * What a shard would merge: the generations above its watermark it takes this round.
     *
     * @param failure why the shard cannot be planned (an unreadable seal), or null
     */
    public record MergePlan(
            String shard,
            long watermark,
            List<SealedGeneration> generations,
            long bytes,
            int leftover,
            RuntimeException failure) {}

    /** A shard's rows, read and de-duplicated, waiting for the commit. Closing frees them. */
    public static final class PreparedMerge implements AutoCloseable {
        private final MergePlan plan;
        private final MergeSource source;
        private final Duration read;

        PreparedMerge(MergePlan plan, MergeSource source, Duration read) {
            this.plan = plan;
            this.source = source;
            this.read = read;
        }

        public MergePlan plan() {
            return plan;
        }

        MergeSource source() {
            return source;
        }

        public int rows() {
            return source.rows();
        }

        public long memoryBytes() {
            return source.bytes();
        }

        MergeResult result(Duration commit) {
            List<Long> generations = plan.generations().stream()
                    .map(SealedGeneration::generation)
                    .toList();
            return new MergeResult(
                    plan.shard(),
                    generations,
                    plan.watermark(),
                    generations.get(generations.size() - 1),
                    rows(),
                    plan.bytes(),
                    read,
                    commit,
                    plan.leftover());
        }

        @Override
        public void close() {
            source.close();
        }
    }

    /**
     * One round's outcome: each shard's result (an empty one when it had nothing or was merged meanwhile) or
     * error, and how many commits it took (1 when no shard failed).
     */
    public record RoundResult(
            Map<String, MergeResult> merged, Map<String, RuntimeException> failed, int commits, Duration duration) {}
}
