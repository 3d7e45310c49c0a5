package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.ObjectStore;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.lance.FragmentMetadata;
import org.lance.fragment.DataFile;

/**
 * A generation whose rows all go to the base, as new keys or in place of older base rows of their keys (those marked
 * deleted by the same commit), is taken in whole: its data files are linked into the base's {@code data/} (a hard link on local disk, a server-side copy on S3) and appended as a fragment of their
 * own, instead of being read and written again. lance-core 7.0.0 accepts such a fragment because a generation is
 * written with the base's exact schema, so its data files carry the base's field ids; this is checked per
 * generation (lance's field ids, names and types), and a generation that differs, has more than one fragment or a
 * deletion file, or shares a key with another generation of the round (a row of it dropped as older) takes the
 * row path. Each attempt links under names of its own (a prefix), so a refused attempt removes only its files. The generation's folder is deleted by GC as before: the base's link or copy stays.
 */
public final class GenerationAdoption {
    private GenerationAdoption() {}

    /** The rows that go in split into whole generations to adopt (with the source each was read into) and the rows to write. */
    record Split(List<MergeSource.Span> adopt, List<MergeSource> sources, List<MergeSource.Row> rows) {
        Split(List<MergeSource.Row> rows) {
            this(List.of(), List.of(), rows);
        }
    }

    /**
     * Generations every row of which is in {@code kept} and whose schema is {@code baseSchema}, at most {@code
     * maxAdopted} of them (the rest are written); {@code overLimit} counts the ones left out for that limit.
     */
    static Split split(
            List<MergeSource.Row> kept, String baseSchema, long minRows, int maxAdopted, Runnable overLimit) {
        Map<MergeSource.Span, Integer> appended = new IdentityHashMap<>();
        Map<MergeSource.Span, MergeSource> sourceOf = new IdentityHashMap<>();
        for (MergeSource.Row row : kept) {
            MergeSource.Span span = row.source().spanOf(row.ordinal());
            appended.merge(span, 1, Integer::sum);
            sourceOf.put(span, row.source());
        }
        List<MergeSource.Span> adopt = new ArrayList<>();
        List<MergeSource> sources = new ArrayList<>();
        for (Map.Entry<MergeSource.Span, Integer> entry : appended.entrySet()) {
            MergeSource.Span span = entry.getKey();
            if (span.fragment() != null
                    && span.rows() >= minRows
                    && entry.getValue() == span.rows()
                    && span.fragment().getPhysicalRows() == span.rows()
                    && span.schema().equals(baseSchema)) {
                if (adopt.size() >= maxAdopted) {
                    overLimit.run();
                    continue;
                }
                adopt.add(span);
                sources.add(sourceOf.get(span));
            }
        }
        if (adopt.isEmpty()) {
            return new Split(kept);
        }
        Set<MergeSource.Span> adopted = Collections.newSetFromMap(new IdentityHashMap<>());
        adopted.addAll(adopt);
        List<MergeSource.Row> rows = new ArrayList<>();
        for (MergeSource.Row row : kept) {
            if (!adopted.contains(row.source().spanOf(row.ordinal()))) {
                rows.add(row);
            }
        }
        return new Split(adopt, sources, rows);
    }

    /**
     * The generations' data files linked into the base's {@code data/}: a fragment (id to be given) for each
     * generation whose files all linked, the rows they hold, and the generations that did not link.
     */
    public record Linked(List<FragmentMetadata> fragments, long rows, List<MergeSource.Span> failed) {
        public static final Linked NONE = new Linked(List.of(), 0, List.of());
    }

    /** Removes the links made for a commit that is not going to happen. */
    public static void unlink(ObjectStore store, Linked linked) {
        FencedCommit.removeFiles(store, linked.fragments());
    }

    static Linked link(ObjectStore store, List<MergeSource.Span> spans) {
        if (spans.isEmpty()) {
            return Linked.NONE;
        }
        List<FragmentMetadata> fragments = new ArrayList<>();
        long rows = 0;
        List<MergeSource.Span> failed = new ArrayList<>();
        // A name of this attempt's own: two committers adopting the same generation (a handover) never share a
        // file, so the one whose append is refused removes only its own copy (S3 copies do not fail on an existing
        // target, so a shared name would let it delete what the other committed).
        String attempt = UUID.randomUUID().toString().substring(0, 8) + "-";
        for (MergeSource.Span span : spans) {
            List<String> linked = new ArrayList<>();
            List<DataFile> files = new ArrayList<>();
            try {
                for (DataFile file : span.fragment().getFiles()) {
                    String name = attempt + file.getPath();
                    store.copy(span.generation().datasetPath() + "/data/" + file.getPath(), "data/" + name);
                    linked.add("data/" + name);
                    files.add(new DataFile(
                            name,
                            file.getFields(),
                            file.getColumnIndices(),
                            file.getFileMajorVersion(),
                            file.getFileMinorVersion(),
                            file.getFileSizeBytes(),
                            file.getBaseId().orElse(null)));
                }
                fragments.add(new FragmentMetadata(0, files, span.fragment().getPhysicalRows(), null, null));
                rows += span.rows();
            } catch (RuntimeException e) {
                linked.forEach(store::delete);
                failed.add(span);
            }
        }
        return new Linked(fragments, rows, failed);
    }
}
