package dev.rolloutingest.table;

import dev.rolloutingest.retry.Retry;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.GenerationWriter;
import dev.rolloutingest.table.maintenance.TableMaintenance;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.merge.MergeRound;
import dev.rolloutingest.table.merge.TableMerges;
import dev.rolloutingest.table.reads.BulkReads;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.reads.LsmReader;
import dev.rolloutingest.table.reads.ReadCatalog;
import dev.rolloutingest.table.reads.RowStream;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.reads.TailCursor;
import dev.rolloutingest.table.rows.BaseDeletes;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.ObjectStores;
import dev.rolloutingest.table.storage.SharedLanceCache;
import dev.rolloutingest.table.storage.StorageErrors;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.lance.Version;
import org.lance.WriteParams;
import org.lance.memwal.InitializeMemWalParams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rollout table: the one place that knows the layout and every lance-core 7.0.0 workaround.
 *
 * <pre>
 * &lt;table&gt;/                          base dataset, record_id primary key, MemWAL initialised
 * &lt;table&gt;/_mem_wal/&lt;shard&gt;/&lt;folder&gt;  one immutable dataset per sealed generation
 * &lt;table&gt;/_seals/&lt;shard&gt;/&lt;folder&gt;.json  its seal: provenance, written after the dataset
 * </pre>
 *
 * Thread-safe: every operation opens its own dataset handle, so reads never wait on a merge.
 *
 * <p>Over 300 lines because it is the table's one entry point; every method delegates to the class that does the work
 * (writer, reader, merge round, maintenance, snapshots).
 */
public final class RolloutTable implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RolloutTable.class);

    private final TableLocation location;
    private final BufferAllocator allocator;
    private final ObjectStore store;
    private final GenerationCatalog catalog;
    private final GenerationWriter writer;
    private final ReadCatalog readCatalog;
    private final LsmReader reader;
    private final BulkReads bulk;
    private final MergeRound merge;
    private final TableMerges merges;
    private final TableGenerations generations;
    private final TableMaintenance maintenance;
    private final LanceIo lance;
    private final TableSnapshots snapshots;
    private final ResidentMemory resident;

    private RolloutTable(TableLocation location, TableSettings settings, MeterRegistry meters, SharedByTables shared) {
        SharedLanceCache sharedCache = shared == null ? null : shared.cache();
        this.location = location;
        this.allocator = new RootAllocator();
        this.store = ObjectStores.open(location);
        this.lance = sharedCache == null
                ? new LanceIo(location, allocator, settings.readCacheBytes())
                : new LanceIo(location, allocator, sharedCache);
        this.catalog = new GenerationCatalog(store, location.uri());
        this.writer = new GenerationWriter(lance, store, meters);
        this.readCatalog = new ReadCatalog(
                lance,
                catalog,
                Duration.ofMillis(settings.readRefreshMs()),
                settings.readOpenGenerations(),
                settings.readGenerationKeysBytes(),
                settings.readGenerationColumnsBytes());
        this.merge = new MergeRound(lance, store, catalog, settings, meters);
        this.resident = new ResidentMemory(merge, readCatalog);
        this.generations = new TableGenerations(
                lance, allocator, catalog, writer, readCatalog, settings.readRefreshMs(), resident::touch);
        this.reader = new LsmReader(lance, readCatalog, settings, meters);
        this.bulk = new BulkReads(lance, readCatalog, store, settings);
        this.maintenance = new TableMaintenance(
                lance, store, catalog, settings.mergeConflictRetries() + 1, readCatalog::invalidate);
        this.merges = TableMerges.of(location.uri(), merge, shared == null ? null : shared.merges(), settings, () -> {
            resident.touch();
            readCatalog.invalidate();
        });
        this.snapshots = new TableSnapshots(lance, catalog, merges);
    }

    /**
     * Loads lance-core's native library now, which the first table open otherwise does (1.2-2.3 s: it is unpacked from
     * lance-core's jar unless the packaged command finds it beside its jar), so a process may load it on a thread of
     * its own while its start does other work.
     */
    public static void loadNativeLibrary() {
        LanceIo.loadNativeLibrary();
    }

    /** Opens the table, creating it (schema + MemWAL) when nothing is at the URI yet. */
    public static RolloutTable createOrOpen(TableLocation location, TableSettings settings, MeterRegistry meters) {
        return createOrOpen(location, settings, meters, null);
    }

    /** {@link #createOrOpen(TableLocation, TableSettings, MeterRegistry)} with what a catalog's tables share. */
    public static RolloutTable createOrOpen(
            TableLocation location, TableSettings settings, MeterRegistry meters, SharedByTables shared) {
        RolloutTable table = new RolloutTable(location, settings, meters, shared);
        try {
            table.ensureBase(true);
            return table;
        } catch (RuntimeException e) {
            table.close();
            throw e;
        }
    }

    /** Opens an existing rollout table; fails with a typed error when there is none at the URI. */
    public static RolloutTable open(TableLocation location, TableSettings settings, MeterRegistry meters) {
        return open(location, settings, meters, null);
    }

    /** {@link #open(TableLocation, TableSettings, MeterRegistry)} with what a catalog's tables share. */
    public static RolloutTable open(
            TableLocation location, TableSettings settings, MeterRegistry meters, SharedByTables shared) {
        RolloutTable table = new RolloutTable(location, settings, meters, shared);
        try {
            table.ensureBase(false);
            return table;
        } catch (RuntimeException e) {
            table.close();
            throw e;
        }
    }

    private void ensureBase(boolean create) {
        Dataset base;
        try {
            base = lance.openBase();
        } catch (Exception thrown) {
            RuntimeException e = unchecked(thrown);
            if (!LanceIo.isNotFound(e)) {
                throw storageError("opening the base table", e);
            }
            if (!create) {
                throw new RolloutTableException.NotARolloutTable(location.uri(), "no dataset at this URI", e);
            }
            base = createBase();
        }
        try (Dataset opened = base) {
            List<String> differences = RolloutSchema.differences(opened.getSchema());
            if (!differences.isEmpty()) {
                throw new RolloutTableException.SchemaMismatch(location.uri(), String.join("; ", differences));
            }
            if (!hasMemWal(opened)) {
                if (!create) {
                    throw new RolloutTableException.NotARolloutTable(location.uri(), "MemWAL is not initialised", null);
                }
                initializeMemWal();
            }
        }
        maintenance.ensureKeyIndex();
    }

    private Dataset createBase() {
        try {
            Dataset created = Dataset.create(
                    allocator,
                    location.uri(),
                    RolloutSchema.SCHEMA,
                    new WriteParams.Builder()
                            .withMode(WriteParams.WriteMode.CREATE)
                            .withStorageOptions(location.storageOptions())
                            .build());
            log.info("Created rollout table {}", location);
            return created;
        } catch (Exception thrown) {
            RuntimeException e = unchecked(thrown);
            try {
                return lance.openBase(); // another process created it first (exists, or won the commit race)
            } catch (Exception notThere) {
                throw storageError("creating the base table", e);
            }
        }
    }

    private static RuntimeException unchecked(Exception thrown) {
        return LanceIo.unchecked(thrown);
    }

    private static boolean hasMemWal(Dataset base) {
        return base.getIndexes().stream().anyMatch(i -> MemWalWatermarks.INDEX_NAME.equals(i.name()));
    }

    /**
     * Initialises MemWAL once, whoever wins: apps starting together on a new table race here, and the
     * losers see "already initialized" or a commit conflict. Each attempt looks at the latest version first.
     */
    /** Apps starting together on a new table race to initialise MemWAL: a few quick tries settle it. */
    private static final Retry.Policy MEMWAL_INIT_RETRY =
            new Retry.Policy(10, Duration.ofMillis(20), Duration.ofMillis(500));

    private void initializeMemWal() {
        try {
            Retry.run(MEMWAL_INIT_RETRY, e -> true, Retry.Listener.NONE, attempt -> {
                try (Dataset base = lance.openBase()) {
                    if (!hasMemWal(base)) {
                        base.initializeMemWal(new InitializeMemWalParams().withUnsharded());
                    }
                    return null;
                }
            });
        } catch (Retry.Exhausted e) {
            throw storageError("initialising MemWAL", unchecked(e.last()));
        } catch (InterruptedException e) {
            throw storageError("initialising MemWAL", new IllegalStateException("interrupted", e));
        }
    }

    private RuntimeException storageError(String what, RuntimeException e) {
        return StorageErrors.classify(location.uri(), what, e);
    }

    public TableLocation location() {
        return location;
    }

    /** The table's generations: written by ingest, pending until merged, listed by their seals. */
    public TableGenerations generations() {
        return generations;
    }

    /**
     * The seam of the fault tests (test scope reaches it through {@code TableSeams}): {@code fault} runs at each stage of
     * a merge commit and throws to fail the commit there, as a crash of the committer would; null restores.
     */
    void failMergeCommitsAt(Consumer<CommitStage> fault) {
        merge.injectCommitFault(fault);
    }

    /** The seam of the fault tests: every dataset write whose rows make {@code fault} return a message fails. */
    void failDatasetWrites(Function<VectorSchemaRoot, String> fault) {
        lance.injectWriteFault(fault);
    }

    /** Named snapshots of this table (lance tags with the Kafka offsets they hold). */
    public TableSnapshots snapshots() {
        return snapshots;
    }

    /** One rollout as the snapshot holds it (the base at its version; nothing pending). */
    public Optional<RolloutRow> get(String recordId, String snapshot) {
        try (Dataset base = snapshots.open(snapshot)) {
            return reader.getFromBase(base, recordId);
        }
    }

    /** A page of rollouts as the snapshot holds them. */
    public List<RolloutRow> list(ListQuery query, String snapshot) {
        try (Dataset base = snapshots.open(snapshot)) {
            return reader.listFromBase(base, query);
        }
    }

    /**
     * A bulk read for training: the newest value of every key matching the query, base + pending, deletes hidden, as
     * Arrow batches read while the caller consumes them (close the stream). Its cursor (offsets of partitions of
     * {@code topic}) is where a {@link #tail} goes on from.
     */
    public RowStream scan(ScanQuery query, String topic) {
        resident.touch();
        return bulk.scan(query, topic);
    }

    /** {@link #scan(ScanQuery, String)} of a snapshot alone; its cursor is what the snapshot holds. */
    public RowStream scan(ScanQuery query, String topic, String snapshot) {
        return bulk.scanVersion(snapshots.open(snapshot), query, topic);
    }

    /**
     * The keys whose newest row became readable after the cursor: values matching the query's filters and deletes
     * (column {@code _deleted}), each once, at most {@code maxOffsets} offsets per partition (0 = the setting's); the
     * stream's cursor is the next one. See {@link BulkReads#tail}.
     */
    public RowStream tail(TailCursor from, String topic, ScanQuery query, long maxOffsets) {
        resident.touch();
        return bulk.tail(from, topic, query, maxOffsets);
    }

    /** The cursor before every row of this table: a tail from it hands over every key's newest row. */
    public TailCursor startCursor(String topic) {
        return TailCursor.start(location.uri(), topic);
    }

    public Optional<RolloutRow> get(String recordId) {
        resident.touch();
        return reader.get(recordId);
    }

    public List<RolloutRow> list(ListQuery query) {
        resident.touch();
        return reader.list(query);
    }

    /** Rows visible to readers: base plus pending, de-duplicated by record_id. */
    public long countRows() {
        return reader.countRows();
    }

    /** Records in the base table alone: its rows, live ones only (the deletes are kept beside it). */
    public long countBaseRows() {
        try (Dataset base = lance.openBase()) {
            return base.countRows();
        }
    }

    /**
     * Deletes kept beside the base until no older value can merge ({@link BaseDeletes}, {@link
     * TableMaintenance#dropDeletes}).
     */
    public long countBaseDeletes() {
        return BaseDeletes.count(lance);
    }

    /** The one way this table is merged: passes over its shards, in rounds, on its one committer. */
    public TableMerges merges() {
        return merges;
    }

    /** The merge rounds of this table: tests drive their steps one at a time ({@code MergeSteps}). */
    MergeRound mergeRound() {
        return merge;
    }

    /** The table's upkeep: compaction, the key index, the drop of old deletes, garbage collection. */
    public TableMaintenance maintenance() {
        return maintenance;
    }

    /** The base table's latest version: its number, when it was committed, and its data files' bytes. */
    public record BaseState(long version, Instant committedAt, long dataBytes) {}

    public BaseState baseState() {
        try (Dataset base = lance.openBase()) {
            Version latest = base.getVersion();
            return new BaseState(latest.getId(), latest.getDataTime().toInstant(), base.calculateDataSize());
        }
    }

    /** What this table keeps in memory between uses, and how long it has been idle. */
    public ResidentMemory resident() {
        return resident;
    }

    @Override
    public void close() {
        merges.close();
        readCatalog.close();
        lance.close();
        store.close();
        allocator.close();
    }
}
