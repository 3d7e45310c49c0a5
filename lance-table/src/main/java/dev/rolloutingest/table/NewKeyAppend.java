package dev.rolloutingest.table;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * Rows whose keys the base lacks, added to the base as new fragments without a join, in a commit that lands only
 * if no other append of new keys came after the version the key filter was checked against.
 *
 * <p>Why not lance-core's {@code Append}: an Append is rebased over any commit made since its read version, so
 * two committers that both found a key absent would both add it. This commits the new fragments as an {@code
 * Update} that also names the base's first fragment, unchanged, as updated (the <em>commit fence</em>). lance
 * refuses an Update with a retryable conflict ("preempted by concurrent transaction Update") when a commit after
 * its read version updated, deleted or rewrote a fragment it names, so two appends of new keys exclude each
 * other, whoever commits them, while merge-inserts, compactions and deletes of other fragments pass. Only an
 * append adds keys the base lacked (the join path takes only keys the base holds), so the filter check and the
 * commit act as one step. The fence costs what an Append costs: the commit carries two fragments, not the
 * base's whole list (an earlier version committed that list as a {@code Merge} operation: 72 ms against 5 ms at
 * 3,000 fragments, and any append in flight preempted every compaction). Compaction leaves the fence alone
 * ({@link TableMaintenance#compact}), so appends never preempt it.
 *
 * <p>An empty base has no fence: the first append commits as a {@code Merge} operation (the fragment list is
 * empty), which any data commit preempts.
 *
 * <p>The fenced Update's fragments are numbered by lance at the commit, from the manifest's highest id ever: it is
 * rebased over concurrent merge-inserts that add fragments of their own, and ids chosen from its read version
 * collided with theirs (two fragments of one id; the base could no longer be read). The empty base's Merge keeps
 * the ids it is given, numbered above every id the base lists, an index segment covers or the committer has seen.
 */
final class NewKeyAppend {
    private NewKeyAppend() {}

    /** Thrown when another data commit landed after the read version: check the keys again and retry. */
    static final class Preempted extends RuntimeException {
        Preempted(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Writes the batches as new fragment files of the base and commits them, with the adopted ones, on {@code
     * base}'s version ({@code baseFragments} its fragments, listed once by the caller).
     *
     * @param adopted generations' data files already linked into the base's data/ ({@link GenerationAdoption})
     * @param idFloor the lowest fragment id the new fragments may take (ids the caller has seen end below it)
     * @throws Preempted when a data commit came first; the written and linked files are removed
     */
    static Committed commit(
            LanceIo lance,
            ObjectStore store,
            Dataset base,
            List<Fragment> baseFragments,
            List<VectorSchemaRoot> batches,
            GenerationAdoption.Linked adopted,
            int idFloor,
            Map<String, String> properties) {
        List<FragmentMetadata> written = new ArrayList<>();
        try {
            if (!batches.isEmpty()) {
                written.addAll(write(lance, batches, base.getLanceFileFormatVersion()));
            }
        } catch (RuntimeException e) {
            GenerationAdoption.unlink(store, adopted); // no commit follows: the links go
            throw e;
        }
        written.addAll(adopted.fragments());
        // A fenced Update is rebased over concurrent merge-inserts, which add fragments of their own: its fragments
        // are numbered by lance at the commit (id 0), from the manifest's highest id ever. A Merge (the empty base)
        // keeps the ids it is given and lands only if nothing came between, so those are chosen here.
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
                .operation(operation(base, baseFragments, added))
                .transactionProperties(properties)
                .build()) {
            Dataset committed = base.commitTransaction(transaction);
            List<Integer> ids = lanceNumbers
                    ? idsOf(committed, added)
                    : added.stream().map(FragmentMetadata::getId).toList();
            return new Committed(committed, ids);
        } catch (Exception thrown) {
            RuntimeException e = LanceIo.unchecked(thrown);
            if (isPreempted(e)) {
                removeFiles(store, written); // the linked generation files too: only the links go
                throw new Preempted(
                        "Table " + lance.location() + ": an append of new keys at version " + base.version()
                                + " was preempted by another commit",
                        e);
            }
            throw e;
        }
    }

    /**
     * The fenced Update on a base with fragments, else a Merge of the (empty) list. The fence is the first listed
     * fragment: appends keep it first, so every committer reading a version at or after the one that made it
     * first names the same fragment; a commit that rewrites or deletes it preempts every append in flight.
     */
    static Operation operation(Dataset base, List<Fragment> baseFragments, List<FragmentMetadata> added) {
        if (baseFragments.isEmpty()) {
            return Merge.builder().fragments(added).schema(base.getSchema()).build();
        }
        return Update.builder()
                .updatedFragments(List.of(fence(baseFragments).metadata()))
                .newFragments(added)
                .build();
    }

    /** The fragment every append of new keys names as updated: the first one listed. */
    static Fragment fence(List<Fragment> baseFragments) {
        return baseFragments.get(0);
    }

    /** The ids lance gave the committed fragments, found by their first data file (a path of this commit's own). */
    private static List<Integer> idsOf(Dataset committed, List<FragmentMetadata> added) {
        java.util.Set<String> paths = new java.util.HashSet<>();
        added.forEach(f -> paths.add(f.getFiles().get(0).getPath()));
        List<Integer> ids = new ArrayList<>();
        for (Fragment fragment : committed.getFragments()) {
            FragmentMetadata metadata = fragment.metadata();
            if (!metadata.getFiles().isEmpty()
                    && paths.contains(metadata.getFiles().get(0).getPath())) {
                ids.add(fragment.getId());
            }
        }
        if (ids.size() != added.size()) {
            throw new IllegalStateException("Table committed " + added.size() + " appended fragments but " + ids.size()
                    + " are listed with their files at version " + committed.version());
        }
        return ids;
    }

    static boolean isPreempted(RuntimeException e) {
        String message = String.valueOf(e.getMessage());
        return message.contains("preempted") || message.contains("Retryable commit conflict");
    }

    /** The committed version (the caller closes it) and the ids its new fragments got. */
    record Committed(Dataset dataset, List<Integer> fragmentIds) {}

    static int firstFreeId(Dataset base) {
        return firstFreeId(base.getFragments(), base);
    }

    /**
     * Above every fragment the base lists and every fragment an index segment covers. (Listing a base's fragments
     * costs ~8 us each through JNI: a commit lists them once.)
     */
    static int firstFreeId(List<Fragment> baseFragments, Dataset base) {
        int highest = -1;
        for (Fragment fragment : baseFragments) {
            highest = Math.max(highest, fragment.getId());
        }
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
    static void removeFiles(ObjectStore store, List<FragmentMetadata> written) {
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
