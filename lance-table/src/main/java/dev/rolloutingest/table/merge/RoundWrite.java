package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.GenerationKeyColumns;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.BaseDeletes;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.UnmarkedDeletes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.memwal.MergedGeneration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first of a commit's two Lance commits: the round's rows (values and deletes alike) checked against the base and
 * committed as one {@link FencedCommit}. The rule that decides where each row goes:
 *
 * <ul>
 *   <li>a key the committer's filter rules out ({@link BaseKeys}) is new: <b>appended</b>, and a generation all of
 *       whose rows are appended is <b>adopted</b> whole (its files linked, {@link GenerationAdoption}) when it has at
 *       least {@code rollout.merge.adopt.min.rows} rows, while the base has fewer than {@code
 *       rollout.merge.adopt.max.base.fragments} fragments;
 *   <li>every other key is looked up exactly, where the committer's book of the newest keys places it ({@link
 *       KeyAddresses}: the row there must hold it) or else through the join ({@link MergeJoin}): one the base lacks is
 *       appended too; one it holds is <b>joined</b>: the newer of the two by {@link NewestWins} stays, the base row is
 *       marked deleted when the round's row replaces it, and the round's row is dropped when the base's is newer.
 * </ul>
 *
 * A delete (a tombstone, {@link Tombstones}) takes part in the rule like a value, but is kept beside the base, not in it
 * ({@link BaseDeletes}): the base rows it is newer than are marked deleted, and a value older than it that merges later
 * (from another partition) loses to it, so a plain Lance reader of the base sees live rows only. The commit lands only on the version its
 * rows were checked against; when another data commit lands first it is refused, the shards' watermarks are read
 * again (a shard merged meanwhile fails the commit with {@link WatermarkMoved}) and the rows checked again, up to the
 * merge's conflict retries.
 *
 * <p>Over 300 lines because the rule and the commit that applies it against one base version belong together: a
 * refusal sends the same rows through the rule again.
 */
public final class RoundWrite {
    private static final Logger log = LoggerFactory.getLogger(RoundWrite.class);

    private final LanceIo lance;
    private final ObjectStore store;
    private final GenerationCatalog catalog;
    private final TableSettings settings;
    private final BaseKeys keys;
    private final KeyAddresses addresses;
    /** The same filter over the deletes kept beside the base. */
    private final BaseKeys deletedKeys;

    private final MergeMeters meters;
    private final AdoptionRoom room;
    private final GenerationReads reads;
    /** What the versions' commits said of unmarked deletes, read once a version. */
    private final UnmarkedDeletes.Remembered unmarkedDeletes = new UnmarkedDeletes.Remembered();

    RoundWrite(
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
        this.room = room;
        this.store = store;
        this.catalog = catalog;
        this.settings = settings;
        this.keys = keys;
        this.addresses = addresses;
        this.deletedKeys = deletedKeys;
        this.meters = meters;
        this.reads = new GenerationReads(lance, store, meters.generationsReread::increment);
    }

    /**
     * What the write committed: the version it made (null when the base already held every row as new or newer), its
     * rows by path, and the time spent checking the rows against the base (every attempt's).
     */
    record Written(
            Dataset committed,
            long appendedRows,
            long joinedRows,
            long replacedRows,
            long droppedRows,
            long adoptedRows,
            int adoptedGenerations,
            Duration checked) {}

    /**
     * Where each of the round's rows goes against one base version, and what the meters count once it is committed:
     * deletes that replaced a live base value, the other deletes, keys the filter could not rule out that the base
     * lacked. {@code revived}: the replacing values whose key the base held no value of (only a delete kept beside
     * it), the only replacing rows whose key the key filter may lack.
     */
    private record Split(
            List<MergeSource.Row> append,
            List<MergeSource.Row> replace,
            List<MergeSource.Row> revived,
            FencedCommit.Deletions deletions,
            long dropped,
            long deletesApplied,
            long deletesNoOp,
            long falsePositives) {
        void count(MergeMeters meters) {
            meters.rowsByPath.get(MergePath.SUPERSEDED).increment(dropped);
            meters.deletesByResult.get("applied").increment(deletesApplied);
            meters.deletesByResult.get("no-op").increment(deletesNoOp);
            meters.falsePositives.increment(falsePositives);
        }
    }

    /**
     * Commits the rows on {@code base} (whose watermarks the caller checked against {@code planned}), or on a newer
     * base after a refusal, checked again there.
     */
    Written commit(
            Dataset base,
            List<MergeSource.Row> rows,
            List<MergedGeneration> marks,
            Map<String, Long> planned,
            Consumer<CommitStage> fault) {
        Dataset current = base;
        long checkNanos = 0;
        try {
            for (int attempt = 0; attempt <= settings.mergeConflictRetries(); attempt++) {
                long checkStarted = System.nanoTime();
                if (attempt > 0) {
                    if (current != base) {
                        current.close();
                    }
                    current = lance.openBase();
                    requireWatermarks(current, planned);
                }
                List<Fragment> fragments = current.getFragments();
                keys.catchUp(current, fragments);
                Map<String, Long> watermarks = MemWalWatermarks.read(current);
                Map<String, Long> unmarked = unmarkedDeletes.at(current, watermarks);
                Split split = split(current, fragments, rows, watermarks, unmarked);
                checkNanos += System.nanoTime() - checkStarted;
                fault.accept(CommitStage.CHECKED);
                if (split.append().isEmpty()
                        && split.replace().isEmpty()
                        && split.deletions().isEmpty()) {
                    split.count(meters);
                    appendDeletes(rows);
                    return new Written(
                            current == base ? null : current,
                            0,
                            0,
                            0,
                            split.dropped(),
                            0,
                            0,
                            Duration.ofNanos(checkNanos));
                }
                try {
                    Written written = write(current, fragments, split, marks, unmarked, Duration.ofNanos(checkNanos));
                    if (current != base) {
                        current.close();
                    }
                    fault.accept(CommitStage.BASE_COMMITTED);
                    appendDeletes(rows);
                    return written;
                } catch (FencedCommit.Preempted e) {
                    meters.appendsPreempted.increment();
                    log.info("{}; checking the rows again on the newer base", e.getMessage());
                }
            }
            throw new RolloutTableException.Contended(
                    lance.location().uri(),
                    "a merge's data commit was preempted by other commits " + (settings.mergeConflictRetries() + 1)
                            + " times in a row; the round is retried whole");
        } catch (RuntimeException e) {
            if (current != base) {
                current.close();
            }
            throw e;
        }
    }

    /**
     * The round's deletes appended to the deletes kept beside the base ({@link BaseDeletes}), after the base commit
     * that applied them and before their marks: a kept delete is always one a base version applied (a value is never
     * refused for a delete the base has not taken in, which a snapshot could not tell), and until the marks its
     * generation is still pending, so a reader between the two finds it there. A delete
     * already kept (a round merged again after its marks failed, or retried) is not appended twice: the filter of kept
     * deletes rules most out, the rest are looked up.
     */
    private void appendDeletes(List<MergeSource.Row> rows) {
        List<MergeSource.Row> deletes =
                rows.stream().filter(MergeSource.Row::isTombstone).toList();
        if (deletes.isEmpty()) {
            return;
        }
        Map<String, List<MergeJoin.BaseRow>> already = keptDeletesOf(deletes);
        deletes = deletes.stream()
                .filter(row -> already.getOrDefault(row.keyString(), List.of()).stream()
                        .noneMatch(b -> b.partition() == row.partition() && b.offset() == row.offset()))
                .toList();
        if (deletes.isEmpty()) {
            return;
        }
        List<VectorSchemaRoot> batches =
                WriteBatches.slices(reads.withAllColumns(deletes), RolloutSchema.SCHEMA, lance.allocator());
        try {
            BaseDeletes.append(lance, batches);
        } finally {
            batches.forEach(VectorSchemaRoot::close);
        }
    }

    /**
     * The deletes kept beside the base of these rows' keys, by key: only keys the filter of kept deletes may hold are
     * looked up (one scan of the kept deletes' key and order columns); none when no delete was ever kept.
     */
    private Map<String, List<MergeJoin.BaseRow>> keptDeletesOf(List<MergeSource.Row> rows) {
        try (Dataset kept = BaseDeletes.open(lance)) {
            if (kept == null || rows.isEmpty()) {
                return Map.of();
            }
            deletedKeys.catchUp(kept);
            Set<String> maybeKept = new HashSet<>();
            for (MergeSource.Row row : rows) {
                if (deletedKeys.mightHold(row.hash())) {
                    maybeKept.add(row.keyString());
                }
            }
            return maybeKept.isEmpty() ? Map.of() : MergeJoin.SCAN.find(kept, maybeKept);
        }
    }

    /**
     * The rows against one base version and the deletes beside it: values appended or replacing (with the base rows
     * they replace) or dropped; a delete replaces the base rows it is newer than and is itself written beside the
     * base only ({@link #appendDeletes}).
     */
    private Split split(
            Dataset base,
            List<Fragment> fragments,
            List<MergeSource.Row> rows,
            Map<String, Long> watermarks,
            Map<String, Long> unmarked) {
        // A delete needs no look at the kept deletes: a base value older than it goes, and no base value is older
        // than a kept delete. A value older than a delete the base applied must not enter the base: its key is
        // looked up among the deletes applied but not kept yet (only while a round is between its base commit and
        // keeping its deletes) and among the kept ones when their filter may hold it (rarely: a key written again
        // after its delete).
        List<MergeSource.Row> values =
                rows.stream().filter(row -> !row.isTombstone()).toList();
        Map<String, List<MergeJoin.BaseRow>> deleted = new HashMap<>(
                unmarked.isEmpty()
                        ? Map.of() // the usual case: no keys to gather
                        : AppliedDeletes.of(
                                lance,
                                catalog,
                                unmarked,
                                watermarks,
                                values.stream()
                                        .map(MergeSource.Row::keyString)
                                        .collect(java.util.stream.Collectors.toSet())));
        keptDeletesOf(values)
                .forEach((key, kept) -> deleted.merge(key, kept, (a, b) -> {
                    List<MergeJoin.BaseRow> both = new ArrayList<>(a);
                    both.addAll(b);
                    return both;
                }));
        List<MergeSource.Row> append = new ArrayList<>();
        List<MergeSource.Row> maybe = new ArrayList<>();
        long deletesNoOp = 0;
        for (MergeSource.Row row : rows) {
            // a key the book of the newest keys holds was in the base: no probe of the filter for it (16,000
            // updates a round, ~25 ms of probes of a filter of hundreds of MiB at 100M keys)
            boolean mayBeHeld = !settings.mergeAppendNewKeys()
                    || addresses.holds(row.hash())
                    || keys.mightHold(row.hash())
                    || !deleted.isEmpty() && deleted.containsKey(row.keyString());
            if (mayBeHeld) {
                maybe.add(row);
            } else if (row.isTombstone()) {
                deletesNoOp++; // no value of the key is in the base
            } else {
                append.add(row);
            }
        }
        if (maybe.isEmpty()) {
            return new Split(append, List.of(), List.of(), FencedCommit.Deletions.NONE, 0, 0, deletesNoOp, 0);
        }
        // a key updated soon after it landed sits where the book of the newest keys says; the rest are joined
        KeyAddresses.Found placed = addresses.find(base, fragments, maybe, rows.size(), deleted.keySet());
        Map<String, List<MergeJoin.BaseRow>> held = new HashMap<>(placed.rows());
        if (!placed.missed().isEmpty()) {
            MergeJoin how =
                    MergeJoin.forCommit(placed.missed().size(), base.countRows(), settings.mergeScanJoinMaxBaseRows());
            held.putAll(how.find(base, placed.missed()));
            meters.commitsByJoin.get(how).increment();
        }
        List<MergeSource.Row> replace = new ArrayList<>();
        List<MergeSource.Row> revived = new ArrayList<>();
        Map<Integer, List<Integer>> deletions = new HashMap<>();
        long dropped = 0;
        long falsePositives = 0;
        long deletesApplied = 0;
        for (MergeSource.Row row : maybe) {
            Long replacedAt = placed.replaced().get(row.keyString());
            if (replacedAt != null) { // newer than every row of its base row's fragment, with no delete kept
                deletions
                        .computeIfAbsent((int) (replacedAt >>> 32), f -> new ArrayList<>())
                        .add((int) (long) replacedAt);
                if (row.isTombstone()) {
                    deletesApplied++;
                } else {
                    replace.add(row);
                }
                continue;
            }
            List<MergeJoin.BaseRow> inBase = held.getOrDefault(row.keyString(), List.of());
            List<MergeJoin.BaseRow> inDeletes = deleted.getOrDefault(row.keyString(), List.of());
            if (inBase.isEmpty() && inDeletes.isEmpty()) {
                if (row.isTombstone()) {
                    deletesNoOp++;
                } else {
                    append.add(row);
                }
                falsePositives++;
                continue;
            }
            MergeJoin.BaseRow newest = null;
            for (MergeJoin.BaseRow b : inBase) {
                if (newest == null || newer(b, newest)) {
                    newest = b;
                }
            }
            boolean newestIsValue = newest != null;
            for (MergeJoin.BaseRow b : inDeletes) {
                if (newest == null || newer(b, newest)) {
                    newest = b;
                    newestIsValue = false;
                }
            }
            boolean rowWins = NewestWins.replaces(
                    row.partition(),
                    row.offset(),
                    row.ingestedMicros(),
                    newest.partition(),
                    newest.offset(),
                    newest.ingestedMicros());
            for (MergeJoin.BaseRow b : inBase) {
                // the value the row replaces, one older than a kept delete, and any second value of the key an
                // older version of this code left
                if (rowWins || b != newest) {
                    deletions
                            .computeIfAbsent(b.fragment(), f -> new ArrayList<>())
                            .add(b.rowOffset());
                }
            }
            if (!rowWins) {
                dropped++;
                if (row.isTombstone()) {
                    deletesNoOp++;
                }
            } else if (!row.isTombstone()) {
                replace.add(row);
                if (inBase.isEmpty()) {
                    revived.add(row);
                }
            } else if (newestIsValue) {
                deletesApplied++;
            } else {
                deletesNoOp++; // newer than a kept delete: nothing more left the base
            }
        }
        return new Split(
                append,
                replace,
                revived,
                new FencedCommit.Deletions(deletions),
                dropped,
                deletesApplied,
                deletesNoOp,
                settings.mergeAppendNewKeys() ? falsePositives : 0);
    }

    private static boolean newer(MergeJoin.BaseRow a, MergeJoin.BaseRow b) {
        return NewestWins.replaces(
                a.partition(), a.offset(), a.ingestedMicros(), b.partition(), b.offset(), b.ingestedMicros());
    }

    /** Writes the split's rows (adopting whole generations of new keys) and commits them fenced. */
    private Written write(
            Dataset current,
            List<Fragment> fragments,
            Split split,
            List<MergedGeneration> marks,
            Map<String, Long> unmarked,
            Duration checkTime) {
        long started = System.nanoTime();
        Schema table = AddedColumns.tableSchema(current.getSchema());
        if (lance.hasWriteFault()) {
            List<MergeSource.Row> all = new ArrayList<>(split.append());
            all.addAll(split.replace());
            List<VectorSchemaRoot> checked = WriteBatches.slices(reads.withAllColumns(all), table, lance.allocator());
            try {
                checked.forEach(lance::checkWriteFault);
            } finally {
                checked.forEach(VectorSchemaRoot::close);
            }
        }
        // every row that goes in, new or replacing: a generation all of whose rows do is adopted whole
        List<MergeSource.Row> kept = new ArrayList<>(split.append());
        kept.addAll(split.replace());
        // each adopted generation stays a fragment until compaction: the base's count bounds how many are
        int adoptable = room.at(fragments.size());
        GenerationAdoption.Split adoption = settings.mergeAdoptGenerations() && settings.mergeAppendNewKeys()
                ? GenerationAdoption.split(
                        kept,
                        GenerationKeyColumns.schemaOf(current),
                        settings.mergeAdoptMinRows(),
                        adoptable,
                        meters.adoptionsOverFragments::increment)
                : new GenerationAdoption.Split(kept);
        List<MergeSource.Row> written = new ArrayList<>(reads.withAllColumns(adoption.rows()));
        List<VectorSchemaRoot> batches = new ArrayList<>(WriteBatches.slices(written, table, lance.allocator()));
        try {
            GenerationAdoption.Linked adopted = GenerationAdoption.link(store, adoption.adopt());
            try {
                List<MergeSource.Row> notLinked = new ArrayList<>();
                for (MergeSource.Row row : adopted.failed().isEmpty() ? List.<MergeSource.Row>of() : kept) {
                    if (adopted.failed().contains(row.source().spanOf(row.ordinal()))) {
                        notLinked.add(row);
                    }
                }
                if (!notLinked.isEmpty()) {
                    notLinked = reads.withAllColumns(notLinked);
                    written.addAll(notLinked);
                    batches.addAll(WriteBatches.slices(notLinked, table, lance.allocator()));
                }
            } catch (RuntimeException e) {
                GenerationAdoption.unlink(store, adopted);
                throw e;
            }
            Map<String, String> properties = properties(split, marks, unmarked);
            FencedCommit.Committed result = FencedCommit.commit(
                    lance,
                    store,
                    current,
                    fragments,
                    batches,
                    adopted.fragments(),
                    split.deletions(),
                    keys.firstUnseenId(),
                    properties);
            if (result.madeVersion() >= 0) {
                unmarkedDeletes.made(result.madeVersion(), properties);
            }
            room.committed(fragments.size() + result.added().size());
            // every key new to the base: the appended ones, and a value that replaced only a delete kept beside the
            // base (the filter, built after that delete, may lack its key, in a fragment it now counts as seen); a
            // value that replaced a base value has its key in the filter already (a round of updates adds none:
            // 16,000 probes of a filter of hundreds of MiB, ~10 ms at 100M keys)
            List<KeyFilter.Hash> added = new ArrayList<>();
            split.append().forEach(row -> added.add(row.hash()));
            split.revived().forEach(row -> added.add(row.hash()));
            keys.appended(result.added(), added);
            addresses.committed(fragments, result.updated(), split.deletions().rowsByFragment());
            tellAdopted(adoption, adopted, result);
            meters.appendPhase.record(Duration.ofNanos(System.nanoTime() - started));
            // a replacing row counts as joined however it went in; an adopted one is not written
            long replacedAdopted = replacedAdopted(split, adoption, adopted);
            long appendedWritten = written.size() - (split.replace().size() - replacedAdopted);
            meters.rowsByPath.get(MergePath.APPEND).increment(appendedWritten);
            meters.rowsByPath.get(MergePath.ADOPT).increment(adopted.rows() - replacedAdopted);
            meters.rowsByPath.get(MergePath.JOIN).increment(split.replace().size());
            split.count(meters);
            return new Written(
                    result.dataset(),
                    split.append().size(),
                    split.replace().size(),
                    split.deletions().rows(),
                    split.dropped(),
                    adopted.rows(),
                    adopted.fragments().size(),
                    checkTime);
        } finally {
            batches.forEach(VectorSchemaRoot::close);
        }
    }

    /**
     * The book of key addresses takes in the generations the commit adopted, at the ids they got (found by their
     * linked files), without reading them.
     */
    private void tellAdopted(
            GenerationAdoption.Split adoption, GenerationAdoption.Linked adopted, FencedCommit.Committed result) {
        if (adopted.fragments().isEmpty()) {
            return;
        }
        Map<String, org.lance.FragmentMetadata> committedByFile = new HashMap<>();
        result.added().forEach(f -> committedByFile.put(FencedCommit.firstPath(f), f));
        List<MergeSource.Span> spans = new ArrayList<>();
        List<MergeSource> sources = new ArrayList<>();
        List<org.lance.FragmentMetadata> committed = new ArrayList<>();
        int linked = 0; // the linked fragments are the adopted spans that did not fail, in order
        for (int i = 0; i < adoption.adopt().size(); i++) {
            MergeSource.Span span = adoption.adopt().get(i);
            if (adopted.failed().contains(span)) {
                continue;
            }
            org.lance.FragmentMetadata fragment = committedByFile.get(
                    FencedCommit.firstPath(adopted.fragments().get(linked++)));
            if (fragment != null) {
                spans.add(span);
                sources.add(adoption.sources().get(i));
                committed.add(fragment);
            }
        }
        addresses.adopted(spans, sources, committed);
    }

    /** The replacing rows that went in with their adopted generations (linked, so not written). */
    private static long replacedAdopted(
            Split split, GenerationAdoption.Split adoption, GenerationAdoption.Linked adopted) {
        Set<MergeSource.Span> linked = Collections.newSetFromMap(new IdentityHashMap<>());
        linked.addAll(adoption.adopt());
        adopted.failed().forEach(linked::remove);
        return split.replace().stream()
                .filter(row -> linked.contains(row.source().spanOf(row.ordinal())))
                .count();
    }

    /**
     * The data commit's properties: what it merged, and the generations whose deletes it and the data commits before
     * it applied that the base's watermarks do not cover yet ({@link UnmarkedDeletes}).
     */
    private static Map<String, String> properties(
            Split split, List<MergedGeneration> marks, Map<String, Long> unmarkedBefore) {
        Map<String, String> properties = new HashMap<>();
        properties.put(UnmarkedDeletes.DATA_COMMIT, describe(marks));
        Map<String, Long> unmarked = new HashMap<>(unmarkedBefore);
        if (!split.deletions().isEmpty()) {
            marks.forEach(mark -> unmarked.merge(
                    mark.shardId(), mark.generation(), (a, b) -> Long.compareUnsigned(a, b) >= 0 ? a : b));
        }
        if (!unmarked.isEmpty()) {
            properties.put(UnmarkedDeletes.PROPERTY, UnmarkedDeletes.format(unmarked));
        }
        return properties;
    }

    /** The marks as a commit's property names them: how many generations of how many shards. */
    static String describe(List<MergedGeneration> marks) {
        return marks.size() + " generations of "
                + marks.stream().map(MergedGeneration::shardId).distinct().count() + " shards";
    }

    /** This committer's marks' commit made this version: it carries no rows, no unmarked deletes. */
    void marked(long version) {
        unmarkedDeletes.made(version, Map.of());
    }

    /** Thrown when a shard of the commit was merged by another committer while its commit was being retried. */
    static final class WatermarkMoved extends RuntimeException {
        WatermarkMoved(String message) {
            super(message);
        }
    }

    /** After a refused commit: the newer base must still have every shard at its planned watermark. */
    private void requireWatermarks(Dataset base, Map<String, Long> planned) {
        Map<String, Long> now = MemWalWatermarks.read(base);
        for (Map.Entry<String, Long> shard : planned.entrySet()) {
            long watermark = now.getOrDefault(shard.getKey(), 0L);
            if (watermark != shard.getValue()) {
                throw new WatermarkMoved("Table " + lance.location() + " shard " + shard.getKey() + ": watermark moved"
                        + " from " + shard.getValue() + " to " + watermark + " while its commit was retried");
            }
        }
    }
}
