package dev.rolloutingest.table;

import dev.rolloutingest.retry.Retry;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.GenerationWriter;
import dev.rolloutingest.table.generations.PendingShard;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.maintenance.KeyIndexTiers;
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
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
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
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
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
    private final TableMaintenance maintenance;
    private final LanceIo lance;
    private final TableSnapshots snapshots;
    private final long addedColumnsRefreshMs;
    private final int mergeConflictRetries;
    private volatile long lastUsedNanos = System.nanoTime();

    private RolloutTable(TableLocation location, TableSettings settings, MeterRegistry meters, SharedByTables shared) {
        SharedLanceCache sharedCache = shared == null ? null : shared.cache();
        this.location = location;
        this.addedColumnsRefreshMs = settings.readRefreshMs();
        this.mergeConflictRetries = settings.mergeConflictRetries();
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
        this.reader = new LsmReader(lance, readCatalog, settings, meters);
        this.bulk = new BulkReads(lance, readCatalog, store, settings);
        this.merge = new MergeRound(lance, store, catalog, settings, meters);
        this.maintenance = new TableMaintenance(lance, store, catalog);
        this.merges = TableMerges.of(location.uri(), merge, shared == null ? null : shared.merges(), settings, () -> {
            touch();
            readCatalog.invalidate();
        });
        this.snapshots = new TableSnapshots(lance, catalog, merges);
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

    /**
     * Writes a sealed batch of one partition as generation {@code lastOffset + 1}.
     *
     * @param rows the batch's usable records (offsets within [firstOffset, lastOffset]); duplicates of a
     *     record_id are removed here, highest offset wins
     * @param bytes serialized bytes of the batch, kept in the seal for the merge byte budget
     */
    public SealedGeneration writeGeneration(
            String topic, int partition, long firstOffset, long lastOffset, List<RolloutRow> rows, long bytes) {
        try (GenerationBatch batch = newBatch()) {
            rows.stream()
                    .sorted(Comparator.comparingLong(RolloutRow::sourceOffset))
                    .forEach(batch::append);
            return writeGeneration(topic, partition, firstOffset, lastOffset, batch, bytes, List.of());
        }
    }

    /**
     * Writes a sealed batch of one partition as generation {@code lastOffset + 1}; the batch stays open and
     * unchanged (a failed write can be retried with it).
     *
     * @param deadLettered records of the range the caller left out because a write refused them; kept in the seal
     */
    public SealedGeneration writeGeneration(
            String topic,
            int partition,
            long firstOffset,
            long lastOffset,
            GenerationBatch batch,
            long bytes,
            List<SealedGeneration.DeadLettered> deadLettered) {
        touch();
        SealedGeneration sealed = writer.write(topic, partition, firstOffset, lastOffset, batch, bytes, deadLettered);
        readCatalog.invalidate(); // this process's own writes are readable at once
        addedColumnsReadAtMs = 0; // and the columns they added
        return sealed;
    }

    /**
     * Writes a pending generation's dataset again from the rows its seal describes, after its files were lost
     * (deleted by hand, a bucket lifecycle rule): the seal stays, so the generation keeps its number and place.
     */
    public void rewriteGeneration(SealedGeneration seal, GenerationBatch batch) {
        try {
            writer.rewrite(seal, batch);
        } finally {
            readCatalog.invalidate();
        }
    }

    /**
     * An empty batch for one partition's rows, in this table's memory; the caller closes it. A field a producer
     * added must fit the table's column of its name ({@link AddedColumns}), as the table was at most
     * {@code rollout.read.refresh.ms} ago (the seal checks again against the base itself).
     */
    public GenerationBatch newBatch() {
        return new GenerationBatch(allocator, this::addedColumn);
    }

    /** The base's added column of this name; a name not seen reads the base again (at most every 100 ms). */
    private Field addedColumn(String name) {
        Field column = addedColumns().get(name);
        if (column == null && System.currentTimeMillis() - addedColumnsReadAtMs >= 100) {
            addedColumnsReadAtMs = 0;
            column = addedColumns().get(name);
        }
        return column;
    }

    private volatile Map<String, Field> addedColumns = Map.of();
    private volatile long addedColumnsReadAtMs;

    /** The columns producers added to the base, by name, read again at most every read refresh. */
    public Map<String, Field> addedColumns() {
        long now = System.currentTimeMillis();
        if (now - addedColumnsReadAtMs >= addedColumnsRefreshMs) {
            try (Dataset base = lance.openBase()) {
                Map<String, Field> columns = new LinkedHashMap<>();
                AddedColumns.of(base.getSchema()).forEach(f -> columns.put(f.getName(), f));
                addedColumns = Collections.unmodifiableMap(columns);
                addedColumnsReadAtMs = now;
            } catch (RuntimeException e) {
                log.warn(
                        "Table {}: could not read the base's columns ({}); using those read before",
                        location,
                        e.getMessage());
            }
        }
        return addedColumns;
    }

    /**
     * After a generation write failed: the offsets of the rows that make it fail and each one's error, found
     * by writing to memory only. Empty when the batch writes fine there, i.e. the table's store is at fault.
     */
    public Map<Long, String> findUnwritableRows(GenerationBatch batch) {
        Map<Long, String> rows = new LinkedHashMap<>();
        writer.findUnwritableRows(batch).forEach(row -> rows.put(row.offset(), row.error()));
        return rows;
    }

    /**
     * Fails merge commits at a stage, as a crash of the committer there would (fault tests only; null restores):
     * the callback runs at each stage and throws to fail the commit.
     */
    public void injectMergeCommitFault(Consumer<CommitStage> fault) {
        merge.injectCommitFault(fault);
    }

    /** Tests only: fail every dataset write whose rows make {@code fault} return a message. */
    public void injectWriteFault(Function<VectorSchemaRoot, String> fault) {
        lance.injectWriteFault(fault);
    }

    /** Shards that have ever sealed a generation. */
    public List<String> shards() {
        return catalog.shards();
    }

    /** Merged watermark per shard (absent = 0, nothing merged). */
    public Map<String, Long> watermarks() {
        try (Dataset base = lance.openBase()) {
            return MemWalWatermarks.read(base);
        }
    }

    /**
     * Every shard's backlog: its watermark, its pending generations and when the oldest was sealed. As fresh as reads
     * ({@code rollout.read.refresh.ms}; at once after this process's own commits), from one listing and the seals
     * readers keep: what a merge-worker decides its triggers by, every tick, without reading the table each time.
     */
    public Map<String, PendingShard> backlog() {
        return readCatalog.backlog();
    }

    /** A shard's sealed generations above its watermark, ascending. */
    public List<SealedGeneration> pendingGenerations(String shard) {
        long watermark = watermarks().getOrDefault(ShardId.requireValid(shard), 0L);
        return catalog.pending(shard, watermark).stream().map(catalog::seal).toList();
    }

    /**
     * The seal that starts exactly at {@code firstOffset}, if any: how a restarted writer finds a
     * generation it wrote but never announced (the chain continues from its committed position).
     */
    public Optional<SealedGeneration> sealedStartingAt(String shard, long firstOffset) {
        return catalog.everySeal(ShardId.requireValid(shard)).stream()
                .filter(g -> g.firstOffset() == firstOffset)
                .max(Comparator.comparingLong(GenerationCatalog.Listed::lastOffset))
                .map(catalog::seal);
    }

    /** Offsets a shard's sealed generations cover (merged ones until GC removes them): one listing, no seal reads. */
    public long sealedRecords(String shard) {
        return catalog.sealed(ShardId.requireValid(shard)).stream()
                .mapToLong(g -> g.lastOffset() - g.firstOffset() + 1)
                .sum();
    }

    /**
     * The shard's sealed generations in (above, upTo], ascending, merged ones included until GC removes them:
     * one listing, no seal reads. How a merge-worker names what a pass merged whose announcement was lost.
     */
    public List<Long> sealedGenerationsBetween(String shard, long above, long upTo) {
        return catalog.sealed(ShardId.requireValid(shard)).stream()
                .map(GenerationCatalog.Listed::generation)
                .filter(g -> Long.compareUnsigned(g, above) > 0 && Long.compareUnsigned(g, upTo) <= 0)
                .sorted()
                .toList();
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
        touch();
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
        touch();
        return bulk.tail(from, topic, query, maxOffsets);
    }

    /** The cursor before every row of this table: a tail from it hands over every key's newest row. */
    public TailCursor startCursor(String topic) {
        return TailCursor.start(location.uri(), topic);
    }

    /** Pending generation count of a shard: one listing, no seal reads. */
    public int pendingCount(String shard, long watermark) {
        return catalog.pending(ShardId.requireValid(shard), watermark).size();
    }

    public Optional<RolloutRow> get(String recordId) {
        touch();
        return reader.get(recordId);
    }

    public List<RolloutRow> list(ListQuery query) {
        touch();
        return reader.list(query);
    }

    /** Rows visible to readers: base plus pending, de-duplicated by record_id. */
    public long countRows() {
        return reader.countRows();
    }

    /** Records in the base table alone: its rows but the deletes it keeps ({@link #countBaseDeletes}). */
    public long countBaseRows() {
        try (Dataset base = lance.openBase()) {
            return base.countRows() - Tombstones.count(base);
        }
    }

    /** Deletes the base keeps as rows until no older value can merge ({@link #dropDeletes}). */
    public long countBaseDeletes() {
        try (Dataset base = lance.openBase()) {
            return Tombstones.count(base);
        }
    }

    /** The one way this table is merged: passes over its shards, in rounds, on its one committer. */
    public TableMerges merges() {
        return merges;
    }

    /** The merge rounds of this table (benchmarks and tests look at their key filter and lance-core handle). */
    public MergeRound mergeRound() {
        return merge;
    }

    public TableMaintenance.CompactionResult compact(long targetRowsPerFragment) {
        return compact(targetRowsPerFragment, () -> {});
    }

    /** For tests: {@code beforeCommit} runs once the fragments are rewritten, before the compaction commits. */
    public TableMaintenance.CompactionResult compact(long targetRowsPerFragment, Runnable beforeCommit) {
        return compact(targetRowsPerFragment, beforeCommit, () -> {});
    }

    /** For tests: {@code beforeKeyIndexRebuild} runs once the index rebuild after the compaction read the table. */
    public TableMaintenance.CompactionResult compact(
            long targetRowsPerFragment, Runnable beforeCommit, Runnable beforeKeyIndexRebuild) {
        try {
            return maintenance.compact(targetRowsPerFragment, beforeCommit, beforeKeyIndexRebuild);
        } finally {
            readCatalog.invalidate();
        }
    }

    /** Brings the record_id index up to date with every fragment merges added (a rebuild after a compaction). */
    public TableMaintenance.IndexResult optimizeKeyIndex() {
        return optimizeKeyIndex(KeyIndexTiers.DEFAULT);
    }

    /** Brings the record_id index up to date once more rows wait for it than {@code tiers} allows. */
    public TableMaintenance.IndexResult optimizeKeyIndex(KeyIndexTiers tiers) {
        try {
            return maintenance.optimizeKeyIndex(tiers);
        } finally {
            readCatalog.invalidate();
        }
    }

    /**
     * Drops the deletes older than {@code retention} that no pending value can reach (see {@link
     * TableMaintenance#dropDeletes}).
     */
    public TableMaintenance.DropResult dropDeletes(Duration retention) {
        try {
            return maintenance.dropDeletes(retention, mergeConflictRetries + 1);
        } finally {
            readCatalog.invalidate();
        }
    }

    /** The base table's latest version: its number, when it was committed, and its data files' bytes. */
    public record BaseState(long version, Instant committedAt, long dataBytes) {}

    public BaseState baseState() {
        try (Dataset base = lance.openBase()) {
            Version latest = base.getVersion();
            return new BaseState(latest.getId(), latest.getDataTime().toInstant(), base.calculateDataSize());
        }
    }

    /** The base table's latest version. */
    public long baseVersion() {
        try (Dataset base = lance.openBase()) {
            return base.version();
        }
    }

    public TableMaintenance.GcResult collectGarbage(Duration grace) {
        try {
            return maintenance.collectGarbage(grace);
        } finally {
            readCatalog.invalidate();
        }
    }

    private void touch() {
        lastUsedNanos = System.nanoTime();
    }

    /** How long since this table was last written, read or merged through this handle. */
    public Duration idleFor() {
        return Duration.ofNanos(System.nanoTime() - lastUsedNanos);
    }

    /**
     * Memory this table keeps between uses: the merge committer's filter of base keys (~1.8 bytes per key, at least
     * a million keys' worth once it merged) and what the read catalog keeps (pending seals' key filters, generations'
     * key positions). Its lance-core caches are the catalog's shared ones when it has a catalog.
     */
    public long residentBytes() {
        return merge.baseKeys().sizeBytes() + readCatalog.residentBytes();
    }

    /**
     * Lets go of {@link #residentBytes} and of the open base and generation handles (an idle table, or one over the
     * catalog's memory budget); the next merge or read builds them again. Returns the bytes released.
     */
    public long releaseResident() {
        long held = residentBytes();
        merge.baseKeys().release();
        readCatalog.release();
        return held;
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
