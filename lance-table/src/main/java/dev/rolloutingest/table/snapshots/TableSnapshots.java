package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.MergeResult;
import dev.rolloutingest.table.merge.RoundWrite;
import dev.rolloutingest.table.merge.TableMerges;
import dev.rolloutingest.table.rows.LiveRows;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.Tag;
import org.lance.Version;
import org.lance.WriteParams;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Named, immutable states of the table for training runs: a lance tag on a base version, its metadata holding the
 * Kafka offsets the version holds. Any lance reader opening the table at the tag sees exactly the snapshot's rows,
 * and the deletes the base still keeps as rows (their metadata holds {@link Tombstones#MARKER}; the project's reads
 * and an export leave them out); lance's cleanup keeps tagged versions and compaction never changes one.
 *
 * <p>What a snapshot holds is what its base version's merged watermarks say: per shard every record below the
 * watermark (the next offset after the last merged generation), none above. Generations merge whole, so a cut
 * inside a generation is honoured at that generation's first offset: the generation and every record after it
 * are left out, and the snapshot records the offset it really ends at.
 *
 * <p>Over 300 lines because a snapshot's cut, creation, tag and reads are one lifecycle over the same tag metadata.
 */
public final class TableSnapshots {
    private static final Logger log = LoggerFactory.getLogger(TableSnapshots.class);

    /** Tag metadata: {@code topic:partition=offset,...} (or {@code shard=offset} for a shard of another topic). */
    static final String OFFSETS = "rollout.snapshot.offsets";

    static final String CREATED = "rollout.snapshot.created";
    static final String ROWS = "rollout.snapshot.rows";
    static final String REQUESTED_CUT = "rollout.snapshot.requested.cut";

    /** Safe as a lance tag and as a path segment anywhere: letters, digits, '.', '_' and '-'. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    /** How many partitions of a topic are looked for when naming shards (shard ids are hashes). */
    static final int MAX_PARTITIONS = 10_000;

    /** How many base versions, newest first, a cut in the past searches for one at or below it. */
    static final int MAX_VERSIONS_SEARCHED = 1_000;

    private final GenerationCatalog catalog;
    private final TableMerges merges;
    private final LanceIo lance;

    /** {@code merges}: the table's one way of merging, through which a snapshot folds as every merge does. */
    public TableSnapshots(LanceIo lance, GenerationCatalog catalog, TableMerges merges) {
        this.catalog = catalog;
        this.merges = merges;
        this.lance = lance;
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
     * Folds what is pending up to the cut and tags the base version that holds it. The folds are the table's merges
     * ({@link TableMerges}), within its pass limits, so where a merge-worker runs in this process the shard still has
     * one committer; a commit of another process's is fenced and refuses a shard merged meanwhile.
     */
    public Snapshot create(String name, Cut cut) {
        requireValidName(name);
        requireAbsent(name);
        // one base open and one seal listing for the whole request, not one per partition
        Map<String, Long> merged = watermarks();
        List<String> shards = shardsOfTable(merged);
        Map<String, Integer> partitions = partitions(cut.topic(), shards);
        Map<String, String> labels = new HashMap<>();
        partitions.forEach((shard, p) -> labels.put(shard, cut.topic() + ":" + p));
        Map<String, Long> targets = targets(cut, labels, shards, merged);
        for (Map.Entry<String, Long> target : targets.entrySet()) {
            fold(target.getKey(), target.getValue());
        }
        try (Dataset base = lance.openBase()) {
            long version = consistentVersion(base, cut.bounded() ? targets : null, partitions);
            Map<String, Long> watermarks;
            long rows;
            try (Dataset at = base.checkoutVersion(version)) {
                watermarks = MemWalWatermarks.read(at);
                rows = at.countRows() - Tombstones.count(at);
            }
            Map<String, Long> offsets = new TreeMap<>();
            for (String shard : targets.keySet()) {
                offsets.put(labels.getOrDefault(shard, shard), watermarks.getOrDefault(shard, 0L));
            }
            Map<String, String> metadata = new LinkedHashMap<>();
            Instant created = Instant.now();
            metadata.put(OFFSETS, format(offsets));
            metadata.put(CREATED, created.toString());
            metadata.put(ROWS, Long.toString(rows));
            Map<String, Long> requested = new TreeMap<>();
            cut.untilOffsets().forEach((p, o) -> requested.put(cut.topic() + ":" + p, o));
            if (cut.bounded()) {
                metadata.put(REQUESTED_CUT, format(requested));
            }
            try {
                base.tags().create(name, version);
            } catch (RuntimeException e) {
                if (exists(name)) {
                    throw new SnapshotException(
                            SnapshotException.Kind.CONFLICT, "Snapshot " + name + " already exists");
                }
                throw e;
            }
            base.tags().replaceMetadata(name, metadata);
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
                snapshots.add(snapshot(base, tag));
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
                    return snapshot(base, tag);
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
        Snapshot snapshot = get(name);
        LanceIo out = new LanceIo(target, lance.allocator(), 16L << 20);
        try (Dataset existing = out.openBase()) {
            throw new SnapshotException(
                    SnapshotException.Kind.CONFLICT,
                    "Cannot export snapshot " + name + ": " + target.uri() + " already holds a dataset (version "
                            + existing.version() + ")");
        } catch (SnapshotException e) {
            throw e;
        } catch (RuntimeException absent) {
            // nothing there: the export creates it
        } finally {
            out.close();
        }
        try (Dataset at = open(name);
                LanceScanner scanner = at.newScan(new ScanOptions.Builder()
                        .columns(RolloutSchema.allColumns())
                        .batchSize(4096)
                        .build())) {
            // the write takes the reader over and closes it
            try (Dataset written = Dataset.write()
                    .allocator(lance.allocator())
                    .reader(new LiveRows(lance.allocator(), scanner.scanBatches()))
                    .uri(target.uri())
                    .storageOptions(target.storageOptions())
                    .mode(WriteParams.WriteMode.CREATE)
                    .execute()) {
                Map<String, String> config = new LinkedHashMap<>();
                config.put(OFFSETS, format(snapshot.offsets()));
                config.put("rollout.snapshot.name", name);
                config.put("rollout.snapshot.source.table", lance.location().uri());
                config.put("rollout.snapshot.source.version", Long.toString(snapshot.version()));
                written.updateConfig(config);
                long rows = written.countRows();
                log.info("Table {}: snapshot {} exported to {}: {} rows", lance.location(), name, target, rows);
                return rows;
            }
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException(
                    "Table " + lance.location() + ": exporting snapshot " + name + " to " + target + " failed: "
                            + e.getMessage(),
                    e);
        }
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

    /** Shard id to partition, for the topic's partitions the table holds. */
    private static Map<String, Integer> partitions(String topic, List<String> shards) {
        Map<String, Integer> partitions = new HashMap<>();
        for (int p = 0; p < MAX_PARTITIONS && partitions.size() < shards.size(); p++) {
            String shard = ShardId.of(topic, p);
            if (shards.contains(shard)) {
                partitions.put(shard, p);
            }
        }
        return partitions;
    }

    /** Shards that ever sealed (seals of merged generations go with GC) or merged. */
    private List<String> shardsOfTable(Map<String, Long> watermarks) {
        List<String> shards = new ArrayList<>(catalog.shards());
        for (String merged : watermarks.keySet()) {
            if (!shards.contains(merged)) {
                shards.add(merged);
            }
        }
        return shards;
    }

    /** Per shard, the highest generation the snapshot may hold (-1, unsigned: any sealed now). */
    private Map<String, Long> targets(
            Cut cut, Map<String, String> labels, List<String> shards, Map<String, Long> watermarks) {
        Map<String, Long> targets = new TreeMap<>();
        if (!cut.bounded()) {
            for (String shard : shards) {
                List<GenerationCatalog.Listed> sealed = catalog.sealed(shard);
                targets.put(
                        shard,
                        sealed.isEmpty() ? 0L : sealed.get(sealed.size() - 1).generation());
            }
            return targets;
        }
        Map<String, Integer> partitionOf = new HashMap<>();
        cut.untilOffsets().keySet().forEach(p -> partitionOf.put(ShardId.of(cut.topic(), p), p));
        List<String> unnamed = new ArrayList<>();
        for (String shard : shards) {
            if (!partitionOf.containsKey(shard)) {
                unnamed.add(labels.getOrDefault(shard, "shard " + shard));
            }
        }
        if (!unnamed.isEmpty()) {
            throw new SnapshotException(
                    SnapshotException.Kind.BAD_REQUEST,
                    "The cut must name every partition the table holds; it leaves out " + unnamed);
        }
        for (Map.Entry<Integer, Long> entry : new TreeMap<>(cut.untilOffsets()).entrySet()) {
            int partition = entry.getKey();
            long until = entry.getValue();
            String shard = ShardId.of(cut.topic(), partition);
            if (partition < 0 || until < 0) {
                throw new SnapshotException(
                        SnapshotException.Kind.BAD_REQUEST,
                        "The cut " + cut.topic() + ":" + partition + "=" + until + " is negative");
            }
            List<GenerationCatalog.Listed> sealed = catalog.sealed(shard);
            long watermark = watermarks.getOrDefault(shard, 0L);
            long sealedUpTo = Math.max(
                    watermark,
                    sealed.isEmpty() ? 0L : sealed.get(sealed.size() - 1).generation());
            if (until > sealedUpTo) {
                throw new SnapshotException(
                        SnapshotException.Kind.BAD_REQUEST,
                        "The cut " + cut.topic() + ":" + partition + "=" + until + " is beyond what is sealed: records"
                                + " below offset " + sealedUpTo + " are; wait for the next seal or cut lower");
            }
            long target = 0;
            for (GenerationCatalog.Listed g : sealed) {
                if (g.generation() <= until) {
                    target = Math.max(target, g.generation());
                }
            }
            targets.put(shard, target);
        }
        return targets;
    }

    /** Passes in a row that may move nothing before the fold gives up (another committer holding the shard). */
    static final int MAX_PASSES_WITHOUT_PROGRESS = 50;

    /**
     * Merges the shard's generations up to {@code target}, unless already merged (by anyone). A pass merges nothing
     * when another committer (the merge-worker) took the same generations first; the watermark then moves without
     * it, so only passes after which neither happened count against the bound.
     */
    private void fold(String shard, long target) {
        int stalled = 0;
        long watermark = watermarks().getOrDefault(shard, 0L);
        while (Long.compareUnsigned(watermark, target) < 0 && target != 0) {
            MergeResult merged = pass(shard, target);
            long now = watermarks().getOrDefault(shard, 0L);
            if (merged.mergedGenerations().isEmpty() && now == watermark) {
                if (++stalled >= MAX_PASSES_WITHOUT_PROGRESS) {
                    throw new RolloutTableException(
                            "Table " + lance.location() + " shard " + shard + ": " + stalled + " merge passes moved"
                                    + " nothing below generation " + target + "; the watermark stays at " + now,
                            null);
                }
                sleepQuietly(100);
            } else {
                stalled = 0;
            }
            watermark = now;
        }
    }

    /** One pass of the table's merges over {@code shard}, taking no generation above {@code upTo}. */
    private MergeResult pass(String shard, long upTo) {
        try {
            return merges.request(MergeRequest.of(shard).upTo(upTo)).get(FOLD_PASS_TIMEOUT_MINUTES, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RolloutTableException("interrupted while folding shard " + shard + " for a snapshot", e);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new RolloutTableException(
                    "Table " + lance.location() + " shard " + shard + " could not be folded for a snapshot: "
                            + cause.getMessage(),
                    cause);
        }
    }

    /** How long one fold pass may take, waiting for its round included. */
    static final long FOLD_PASS_TIMEOUT_MINUTES = 10;

    private Map<String, Long> watermarks() {
        try (Dataset base = lance.openBase()) {
            return MemWalWatermarks.read(base);
        }
    }

    private static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RolloutTableException("interrupted while folding for a snapshot", e);
        }
    }

    /**
     * The newest base version that holds exactly what its watermarks say and, for a bounded cut, whose every watermark
     * is at or below its target. A round commits its rows (values and deletes alike, all rows: {@link RoundWrite})
     * before its marks, so every version between the two, whoever made it, holds rows above the watermarks and is
     * passed over; no round removes a row without adding one.
     */
    private long consistentVersion(Dataset base, Map<String, Long> targets, Map<String, Integer> partitions) {
        List<Version> versions = new ArrayList<>(base.listVersions());
        versions.sort(Comparator.comparingLong(Version::getId).reversed());
        int searched = 0;
        for (Version version : versions) {
            if (searched++ >= MAX_VERSIONS_SEARCHED) {
                break;
            }
            try (Dataset at = base.checkoutVersion(version.getId())) {
                Map<String, Long> watermarks = MemWalWatermarks.read(at);
                boolean within = targets == null
                        || targets.entrySet().stream()
                                .allMatch(
                                        t -> Long.compareUnsigned(watermarks.getOrDefault(t.getKey(), 0L), t.getValue())
                                                <= 0);
                if (within && holdsOnlyMerged(at, watermarks, partitions)) {
                    return version.getId();
                }
            }
        }
        throw new SnapshotException(
                SnapshotException.Kind.BAD_REQUEST,
                "No base version of the last " + searched + " holds the cut: every one has merged past it (versions"
                        + " older than the GC grace are removed); cut at or after the merged offsets");
    }

    /** True when no row of the version lies at or above its partition's watermark: one scan of two columns. */
    private boolean holdsOnlyMerged(Dataset at, Map<String, Long> watermarks, Map<String, Integer> partitions) {
        if (partitions.isEmpty()) {
            return true;
        }
        List<String> above = new ArrayList<>();
        partitions.forEach((shard, p) -> above.add("(" + RolloutSchema.SOURCE_PARTITION + " = " + p + " AND "
                + RolloutSchema.SOURCE_OFFSET + " >= " + watermarks.getOrDefault(shard, 0L) + ")"));
        try (LanceScanner scanner = at.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.SOURCE_PARTITION))
                        .filter(String.join(" OR ", above))
                        .limit(1)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                if (reader.getVectorSchemaRoot().getRowCount() > 0) {
                    return false;
                }
            }
            return true;
        } catch (Exception e) {
            throw new RolloutTableException(
                    "Table " + lance.location() + ": checking version " + at.version() + " failed: " + e.getMessage(),
                    e);
        }
    }

    private static Snapshot snapshot(Dataset base, Tag tag) {
        Map<String, String> metadata = tag.getMetadata() == null ? Map.of() : tag.getMetadata();
        Optional<Instant> created =
                Optional.ofNullable(metadata.get(CREATED)).map(Instant::parse).or(tag::getCreatedAt);
        long rows;
        if (metadata.containsKey(ROWS)) {
            rows = Long.parseLong(metadata.get(ROWS));
        } else {
            try (Dataset at = base.checkoutVersion(tag.getVersion())) {
                rows = at.countRows() - Tombstones.count(at);
            }
        }
        return new Snapshot(
                tag.getName(),
                tag.getVersion(),
                created,
                rows,
                parse(metadata.get(OFFSETS)),
                parse(metadata.get(REQUESTED_CUT)));
    }

    static String format(Map<String, Long> offsets) {
        StringBuilder out = new StringBuilder();
        offsets.forEach((k, v) ->
                out.append(out.isEmpty() ? "" : ",").append(k).append('=').append(v));
        return out.toString();
    }

    static Map<String, Long> parse(String formatted) {
        Map<String, Long> offsets = new TreeMap<>();
        if (formatted == null || formatted.isBlank()) {
            return offsets;
        }
        for (String pair : formatted.split(",")) {
            int eq = pair.lastIndexOf('=');
            offsets.put(pair.substring(0, eq), Long.parseLong(pair.substring(eq + 1)));
        }
        return offsets;
    }
}
