package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.merge.TableMerges;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.lance.Dataset;
import org.lance.Tag;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Named, immutable states of the table for training runs: a lance tag on a base version, its metadata holding the
 * Kafka offsets the version holds. Any lance reader opening the table at the tag sees exactly the snapshot's rows,
 * live ones only (the deletes are kept beside the base; a tag an earlier version made may still hold delete rows,
 * their metadata holding {@link Tombstones#MARKER}, which the project's reads and an export leave out); lance's cleanup
 * keeps tagged versions and compaction never changes one.
 *
 * <p>What a snapshot holds is what its base version's merged watermarks say: per shard every record below the
 * watermark (the next offset after the last merged generation), none above. Generations merge whole, so a cut
 * inside a generation is honoured at that generation's first offset: the generation and every record after it
 * are left out, and the snapshot records the offset it really ends at ({@link CutPlan}).
 *
 * <p>This class is the snapshots' entry point and their lifecycle (create, list, get, drop, open, export); what a tag
 * holds is {@link SnapshotTags}.
 */
public final class TableSnapshots {
    private static final Logger log = LoggerFactory.getLogger(TableSnapshots.class);

    /** Safe as a lance tag and as a path segment anywhere: letters, digits, '.', '_' and '-'. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private final GenerationCatalog catalog;
    private final LanceIo lance;
    private final SnapshotFold fold;
    private final SnapshotExport export;

    /** {@code merges}: the table's one way of merging, through which a snapshot folds as every merge does. */
    public TableSnapshots(LanceIo lance, GenerationCatalog catalog, TableMerges merges) {
        this.catalog = catalog;
        this.lance = lance;
        this.fold = new SnapshotFold(lance, merges);
        this.export = new SnapshotExport(lance);
    }

    /**
     * A snapshot as listed.
     *
     * @param offsets per partition ({@code topic:partition}), the first offset the snapshot leaves out
     * @param requestedCut the cut asked for, when it was not "everything sealed"
     */
    public record Snapshot(
            String name,
            long version,
            Optional<Instant> created,
            long rows,
            Map<String, Long> offsets,
            Map<String, Long> requestedCut) {
        /** As the CLI prints it and the HTTP APIs answer it. */
        public Map<String, Object> describe() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("name", name);
            out.put("version", version);
            out.put("created", created.map(Instant::toString).orElse(null));
            out.put("rows", rows);
            out.put("offsets", offsets);
            if (!requestedCut.isEmpty()) {
                out.put("requested_cut", requestedCut);
            }
            return out;
        }
    }

    /**
     * Where a snapshot ends. Empty: every record sealed when it is made. Otherwise per partition of {@code topic}
     * the first offset it leaves out; every partition the table holds must be named.
     */
    public record Cut(String topic, Map<Integer, Long> untilOffsets) {
        public static Cut everythingSealed(String topic) {
            return new Cut(topic, Map.of());
        }

        boolean bounded() {
            return !untilOffsets.isEmpty();
        }
    }

    /** A snapshot request the table cannot honour, with what kind of problem it is. */
    public static final class SnapshotException extends RolloutTableException {
        public enum Kind {
            BAD_REQUEST,
            NOT_FOUND,
            CONFLICT
        }

        private final Kind kind;

        public SnapshotException(Kind kind, String message) {
            super(message, null);
            this.kind = kind;
        }

        public Kind kind() {
            return kind;
        }
    }

    /**
     * Folds what is pending up to the cut ({@link SnapshotFold}) and tags the base version that holds it ({@link
     * SnapshotVersions}).
     */
    public Snapshot create(String name, Cut cut) {
        requireValidName(name);
        requireAbsent(name);
        // one base open and one seal listing for the whole request, not one per partition
        CutPlan plan = CutPlan.of(catalog, cut, fold.watermarks());
        fold.foldAll(plan.targets());
        try (Dataset base = lance.openBase()) {
            long version = SnapshotVersions.consistentVersion(
                    lance.location(), base, cut.bounded() ? plan.targets() : null, plan.partitions());
            Map<String, Long> watermarks;
            long rows;
            try (Dataset at = base.checkoutVersion(version)) {
                watermarks = MemWalWatermarks.read(at);
                rows = SnapshotVersions.liveRows(at);
            }
            Map<String, Long> offsets = new TreeMap<>();
            for (String shard : plan.targets().keySet()) {
                offsets.put(plan.labels().getOrDefault(shard, shard), watermarks.getOrDefault(shard, 0L));
            }
            Instant created = Instant.now();
            Map<String, Long> requested = new TreeMap<>();
            cut.untilOffsets().forEach((p, o) -> requested.put(cut.topic() + ":" + p, o));
            try {
                base.tags().create(name, version);
            } catch (RuntimeException e) {
                if (exists(name)) {
                    throw new SnapshotException(
                            SnapshotException.Kind.CONFLICT, "Snapshot " + name + " already exists");
                }
                throw e;
            }
            base.tags().replaceMetadata(name, SnapshotTags.metadata(offsets, created, rows, requested));
            log.info(
                    "Table {}: snapshot {} at version {}: {} rows, offsets {}",
                    lance.location(),
                    name,
                    version,
                    rows,
                    offsets);
            return new Snapshot(name, version, Optional.of(created), rows, offsets, requested);
        }
    }

    /** Every snapshot, oldest version first; a tag made by another tool is listed with what lance knows of it. */
    public List<Snapshot> list() {
        try (Dataset base = lance.openBase()) {
            List<Snapshot> snapshots = new ArrayList<>();
            for (Tag tag : base.tags().list()) {
                snapshots.add(SnapshotTags.read(base, tag));
            }
            snapshots.sort(Comparator.comparingLong(Snapshot::version).thenComparing(Snapshot::name));
            return snapshots;
        }
    }

    /** The HTTP APIs' answer to GET /snapshots. */
    public Map<String, Object> describeAll() {
        return Map.of("snapshots", list().stream().map(Snapshot::describe).toList());
    }

    public Snapshot get(String name) {
        requireValidName(name);
        try (Dataset base = lance.openBase()) {
            for (Tag tag : base.tags().list()) {
                if (tag.getName().equals(name)) {
                    return SnapshotTags.read(base, tag);
                }
            }
        }
        throw notFound(name);
    }

    /** Drops the tag; GC may then remove what only the snapshot kept. */
    public void drop(String name) {
        get(name);
        try (Dataset base = lance.openBase()) {
            base.tags().delete(name);
        }
        log.info("Table {}: snapshot {} dropped", lance.location(), name);
    }

    /** The base table at the snapshot's version; the caller closes it. */
    public Dataset open(String name) {
        long version = get(name).version();
        try (Dataset base = lance.openBase()) {
            return base.checkoutVersion(version);
        }
    }

    /**
     * Writes the snapshot's rows as a standalone lance dataset at {@code target} (it must not exist), its offsets,
     * source table and version in the dataset's config.
     */
    public long export(String name, TableLocation target) {
        return export.export(get(name), () -> open(name), target);
    }

    static void requireValidName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new SnapshotException(
                    SnapshotException.Kind.BAD_REQUEST,
                    "Snapshot name '" + name + "' is not allowed: use 1-128 letters, digits, '.', '_' or '-',"
                            + " starting with a letter or digit");
        }
    }

    private void requireAbsent(String name) {
        if (exists(name)) {
            throw new SnapshotException(SnapshotException.Kind.CONFLICT, "Snapshot " + name + " already exists");
        }
    }

    private boolean exists(String name) {
        try (Dataset base = lance.openBase()) {
            return base.tags().list().stream().anyMatch(t -> t.getName().equals(name));
        }
    }

    private static SnapshotException notFound(String name) {
        return new SnapshotException(SnapshotException.Kind.NOT_FOUND, "No snapshot named " + name);
    }
}
