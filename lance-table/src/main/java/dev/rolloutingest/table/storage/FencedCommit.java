package dev.rolloutingest.table.storage;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.lance.Transaction;
import org.lance.WriteParams;
import org.lance.fragment.DataFile;
import org.lance.index.Index;
import org.lance.operation.Merge;
import org.lance.operation.Operation;
import org.lance.operation.Update;

/**
 * Every commit that changes the base's rows: a merge's new and replacing rows added as new fragments, the rows they
 * replace marked deleted, and the drop of old deletes; each lands only if no other such commit came after the version
 * its rows were checked against.
 *
 * <p>Why not lance-core's {@code Append} or {@code mergeInsert}: both are rebased over commits made since their read
 * version, so two committers that both found a key absent would both add it, and a merge-insert retried by lance on a
 * newer base applies rows checked against an older one. This commits an {@code Update} that also names the base's
 * first fragment, unchanged, as updated (the <em>commit fence</em>). lance refuses an Update with a retryable conflict
 * ("preempted by concurrent transaction Update") when a commit after its read version updated, deleted or rewrote a
 * fragment it names (measured: {@code LancePitfallsTest}), so two data commits exclude each other, whoever makes them,
 * while index segments, the marks' commits and compactions of other fragments pass. The refused one checks its rows
 * again against the newer base: a key is added only by a commit that found it absent, a row replaced only by one
 * that found it older. The fence costs what an Append costs: the commit carries the fence, the fragments whose rows it
 * deletes and its new ones, not the base's whole list. Compaction leaves the fence alone (TableMaintenance.compact), so data commits never preempt it.
 *
 * <p>An empty base has no fence: the first commit is a {@code Merge} operation (the fragment list is empty), which
 * any data commit preempts.
 *
 * <p>The fenced Update's new fragments are numbered by lance at the commit, from the manifest's highest id ever: ids
 * chosen from its read version collided with those of a commit rebased over (two fragments of one id; the base could
 * no longer be read). The empty base's Merge keeps the ids it is given, numbered above every id the base lists, an
 * index segment covers or the committer has seen.
 *
 * <p>Over 300 lines because its steps are one protocol: writing the rows, marking deletions, the fence, telling a
 * refusal from a commit that landed, and removing files only once no later version names them.
 */
public final class FencedCommit {
    private FencedCommit() {}

    /** Thrown when another data commit landed after the read version: check the rows again and retry. */
    public static final class Preempted extends RuntimeException {
        Preempted(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Rows of base fragments to mark deleted: fragment id to row offsets within it. Empty for a commit that only
     * adds rows.
     */
    public record Deletions(Map<Integer, List<Integer>> rowsByFragment) {
        public static final Deletions NONE = new Deletions(Map.of());

        public boolean isEmpty() {
            return rowsByFragment.isEmpty();
        }

        public long rows() {
            return rowsByFragment.values().stream().mapToLong(List::size).sum();
        }
    }

    /**
     * Writes the batches as new fragment files of the base, marks the deletions, and commits both, with the adopted
     * fragments, on {@code base}'s version ({@code baseFragments} its fragments, listed once by the caller).
     *
     * @param linked fragments whose data files are already in the base's data/ (adopted generations' files), added as
     *     they are and removed like written ones when the commit is refused
     * @param idFloor the lowest fragment id the new fragments may take (ids the caller has seen end below it)
     * @throws Preempted when a data commit came first; the written and linked files are removed once no version
     *     after the read version is seen to name them
     */
    public static Committed commit(
            LanceIo lance,
            ObjectStore store,
            Dataset base,
            List<Fragment> baseFragments,
            List<VectorSchemaRoot> batches,
            List<FragmentMetadata> linked,
            Deletions deletions,
            int idFloor,
            Map<String, String> properties) {
        List<FragmentMetadata> written = new ArrayList<>();
        List<FragmentMetadata> updated = new ArrayList<>();
        List<Long> removed = new ArrayList<>();
        try {
            if (!batches.isEmpty()) {
                written.addAll(write(lance, batches, base.getLanceFileFormatVersion()));
            }
            markDeleted(base, baseFragments, deletions, updated, removed);
        } catch (RuntimeException e) {
            removeFiles(store, written);
            removeFiles(store, linked); // no commit follows: the links go
            throw e;
        }
        written.addAll(linked);
        // A fenced Update is rebased over commits that do not touch the fragments it names, some of which add
        // fragments of their own: its fragments are numbered by lance at the commit (id 0), from the manifest's
        // highest id ever. A Merge (the empty base) keeps the ids it is given and lands only if nothing came between.
        boolean lanceNumbers = !baseFragments.isEmpty();
        int next = lanceNumbers ? 0 : Math.max(idFloor, firstFreeId(baseFragments, base)); // index listing: Merge only
        List<FragmentMetadata> added = new ArrayList<>();
        for (FragmentMetadata f : written) {
            added.add(new FragmentMetadata(
                    lanceNumbers ? 0 : next++,
                    f.getFiles(),
                    f.getPhysicalRows(),
                    f.getDeletionFile(),
                    f.getRowIdMeta()));
        }
        try (Transaction transaction = new Transaction.Builder()
                .readVersion(base.version())
                .operation(operation(base, baseFragments, added, updated, removed))
                .transactionProperties(properties)
                .build()) {
            Dataset committed = base.commitTransaction(transaction);
            return committed(
                    committed, lanceNumbers ? null : added, added, updated, highestId(baseFragments) + 1, true);
        } catch (Exception thrown) {
            RuntimeException e = LanceIo.unchecked(thrown);
            if (isPreempted(e)) {
                Optional<Dataset> landed = landed(lance, base.version(), added);
                if (landed.isPresent()) {
                    // a store that retried the manifest write can report a conflict for a commit that landed
                    return committed(landed.get(), null, added, updated, highestId(baseFragments) + 1, false);
                }
                removeUnreferenced(lance, store, base.version(), written);
                throw new Preempted(
                        "Table " + lance.location() + ": a data commit at version " + base.version()
                                + " was preempted by another commit",
                        e);
            }
            throw e;
        }
    }

    /**
     * The committed version with its new fragments ({@code numbered}, or as lance numbered them); closed on failure.
     */
    private static Committed committed(
            Dataset dataset,
            List<FragmentMetadata> numbered,
            List<FragmentMetadata> added,
            List<FragmentMetadata> updated,
            int likelyFirstId,
            boolean made) {
        try {
            return new Committed(
                    dataset,
                    numbered != null ? numbered : numberedBy(dataset, added, likelyFirstId),
                    updated,
                    made ? dataset.version() : -1);
        } catch (RuntimeException e) {
            dataset.close();
            throw e;
        }
    }

    /** Marks the rows deleted: an updated fragment (a new deletion file) each, or a removed one when none is left. */
    private static void markDeleted(
            Dataset base,
            List<Fragment> baseFragments,
            Deletions deletions,
            List<FragmentMetadata> updated,
            List<Long> removed) {
        if (deletions.isEmpty()) {
            return;
        }
        Map<Integer, Fragment> byId = new HashMap<>();
        baseFragments.forEach(f -> byId.put(f.getId(), f));
        for (Map.Entry<Integer, List<Integer>> entry :
                deletions.rowsByFragment().entrySet()) {
            Fragment fragment = byId.get(entry.getKey());
            if (fragment == null) {
                throw new IllegalStateException("fragment " + entry.getKey() + " is not in version " + base.version());
            }
            FragmentMetadata after = fragment.deleteRows(entry.getValue());
            if (after == null) {
                removed.add((long) entry.getKey());
            } else {
                updated.add(after);
            }
        }
    }

    /**
     * The version that holds the added fragments, if a version after {@code readVersion} does (the commit landed
     * after all). Looks at the latest version only when it names them: a landed commit compacted away at once is
     * not recognised, and its files are then kept ({@link #removeUnreferenced}).
     */
    private static Optional<Dataset> landed(LanceIo lance, long readVersion, List<FragmentMetadata> added) {
        if (added.isEmpty()) {
            return Optional.empty();
        }
        Dataset latest = lance.openBase();
        try {
            if (latest.version() > readVersion
                    && !namedBy(latest.getFragments(), added).isEmpty()) {
                return Optional.of(latest);
            }
        } catch (RuntimeException e) {
            latest.close();
            throw e;
        }
        latest.close();
        return Optional.empty();
    }

    /**
     * Removes the written files, unless a version after the read version names one of them (then the commit landed
     * and was rewritten, and older versions still read them); at most {@link #MAX_VERSIONS_CHECKED} versions are
     * looked at, beyond that the files stay, unreferenced or not, costing only their bytes.
     */
    private static void removeUnreferenced(
            LanceIo lance, ObjectStore store, long readVersion, List<FragmentMetadata> written) {
        if (written.isEmpty()) {
            return;
        }
        try (Dataset latest = lance.openBase()) {
            long newest = latest.version();
            if (newest - readVersion > MAX_VERSIONS_CHECKED) {
                return;
            }
            for (long version = readVersion + 1; version <= newest; version++) {
                try (Dataset at = latest.checkoutVersion(version)) {
                    if (!namedBy(at.getFragments(), written).isEmpty()) {
                        return;
                    }
                }
            }
        } catch (RuntimeException e) {
            return; // cannot tell: keep them
        }
        removeFiles(store, written);
    }

    /** Versions a refused commit looks through before removing its files. */
    static final int MAX_VERSIONS_CHECKED = 64;

    /** Fragments of the list that hold one of the written fragments' data files. */
    private static List<Fragment> namedBy(List<Fragment> fragments, List<FragmentMetadata> written) {
        Set<String> paths = new HashSet<>();
        written.forEach(f -> f.getFiles().forEach(file -> paths.add(file.getPath())));
        List<Fragment> naming = new ArrayList<>();
        for (Fragment fragment : fragments) {
            for (DataFile file : fragment.metadata().getFiles()) {
                if (paths.contains(file.getPath())) {
                    naming.add(fragment);
                    break;
                }
            }
        }
        return naming;
    }

    /**
     * The fenced Update on a base with fragments, else a Merge of the (empty) list. The fence is the first listed
     * fragment: data commits keep it first, so every committer reading a version at or after the one that made it
     * first names the same fragment; a commit that rewrites or deletes it preempts every data commit in flight.
     */
    static Operation operation(
            Dataset base,
            List<Fragment> baseFragments,
            List<FragmentMetadata> added,
            List<FragmentMetadata> updated,
            List<Long> removed) {
        if (baseFragments.isEmpty()) {
            return Merge.builder().fragments(added).schema(base.getSchema()).build();
        }
        Fragment fence = fence(baseFragments);
        List<FragmentMetadata> named = new ArrayList<>(updated);
        boolean fenceNamed =
                removed.contains((long) fence.getId()) || updated.stream().anyMatch(f -> f.getId() == fence.getId());
        if (!fenceNamed) {
            named.add(fence.metadata());
        }
        return Update.builder()
                .updatedFragments(named)
                .removedFragmentIds(removed)
                .newFragments(added)
                .build();
    }

    /** The fragment every data commit names as updated: the first one listed. */
    public static Fragment fence(List<Fragment> baseFragments) {
        return baseFragments.get(0);
    }

    /**
     * The committed fragments as lance numbered them, found by their first data file (a path of this commit's own):
     * where lance numbers them when nothing came between (one after another from above the highest id the base
     * listed, a fragment each asked for), else in the whole list (~8 us a fragment through JNI).
     */
    private static List<FragmentMetadata> numberedBy(
            Dataset committed, List<FragmentMetadata> added, int likelyFirstId) {
        if (added.isEmpty()) {
            return List.of();
        }
        List<FragmentMetadata> inPlace = new ArrayList<>();
        for (int i = 0; i < added.size(); i++) {
            FragmentMetadata at = fragmentOrNull(committed, likelyFirstId + i);
            if (at == null || !firstPath(at).equals(firstPath(added.get(i)))) {
                break;
            }
            inPlace.add(at);
        }
        if (inPlace.size() == added.size()) {
            return inPlace;
        }
        java.util.Set<String> paths = new java.util.HashSet<>();
        added.forEach(f -> paths.add(firstPath(f)));
        List<FragmentMetadata> numbered = new ArrayList<>();
        for (Fragment fragment : committed.getFragments()) {
            FragmentMetadata metadata = fragment.metadata();
            if (!metadata.getFiles().isEmpty() && paths.contains(firstPath(metadata))) {
                numbered.add(metadata);
            }
        }
        if (numbered.size() != added.size()) {
            throw new IllegalStateException("Table committed " + added.size() + " appended fragments but "
                    + numbered.size() + " are listed with their files at version " + committed.version());
        }
        return numbered;
    }

    private static FragmentMetadata fragmentOrNull(Dataset dataset, int id) {
        try {
            return dataset.getFragment(id).metadata();
        } catch (RuntimeException absent) { // lance-core 7.0.0 answers an absent id with a NullPointerException
            return null;
        }
    }

    /** A fragment's first data file ("" for none): what tells this commit's fragments from any other's. */
    public static String firstPath(FragmentMetadata fragment) {
        return fragment.getFiles().isEmpty() ? "" : fragment.getFiles().get(0).getPath();
    }

    private static int highestId(List<Fragment> fragments) {
        int highest = -1;
        for (Fragment fragment : fragments) {
            highest = Math.max(highest, fragment.getId());
        }
        return highest;
    }

    /** True for lance-core's retryable commit conflict: another writer committed first. */
    public static boolean isPreempted(RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        return message.contains("preempted") || message.contains("Retryable commit conflict");
    }

    /**
     * The committed version (the caller closes it), its new fragments, and the fragments it deleted rows in.
     *
     * @param added the new fragments as committed, with the ids they got
     * @param updated the base fragments the commit marked rows deleted in, as it left them (one it emptied is not
     *     among them)
     * @param madeVersion the version this commit made; -1 when it was found landed after lance reported a conflict
     *     ({@code dataset} is then the latest version, maybe a later one)
     */
    public record Committed(
            Dataset dataset, List<FragmentMetadata> added, List<FragmentMetadata> updated, long madeVersion) {}

    public static int firstFreeId(Dataset base) {
        return firstFreeId(base.getFragments(), base);
    }

    /**
     * Above every fragment the base lists and every fragment an index segment covers. (Listing a base's fragments
     * costs ~8 us each through JNI: a commit lists them once.)
     */
    static int firstFreeId(List<Fragment> baseFragments, Dataset base) {
        int highest = highestId(baseFragments);
        for (Index index : base.getIndexes()) {
            for (Integer id : index.fragments().orElse(List.of())) {
                highest = Math.max(highest, id);
            }
        }
        return highest + 1;
    }

    /** Writes the batches as new fragments, in the base's file format version (not Fragment.create's own default). */
    private static List<FragmentMetadata> write(LanceIo lance, List<VectorSchemaRoot> batches, String fileVersion) {
        batches.forEach(lance::checkWriteFault);
        try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(lance.allocator())) {
            Data.exportArrayStream(lance.allocator(), new BatchReader(lance.allocator(), batches), stream);
            return Fragment.create(
                    lance.location().uri(),
                    stream,
                    new WriteParams.Builder()
                            .withStorageOptions(lance.location().storageOptions())
                            .withDataStorageVersion(fileVersion)
                            .build());
        } catch (Exception e) {
            throw LanceIo.unchecked(e);
        }
    }

    /** Best effort: a file left behind is unreferenced and costs only its bytes. */
    public static void removeFiles(ObjectStore store, List<FragmentMetadata> written) {
        for (FragmentMetadata fragment : written) {
            for (DataFile file : fragment.getFiles()) {
                try {
                    store.delete("data/" + file.getPath());
                } catch (RuntimeException ignored) {
                    // unreferenced either way
                }
            }
        }
    }
}
