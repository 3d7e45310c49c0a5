package dev.rolloutingest.table;

import dev.rolloutingest.table.generations.BatchSizing;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.GenerationWriter;
import dev.rolloutingest.table.generations.PendingShard;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.reads.ReadCatalog;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.Field;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A table's generations ({@link RolloutTable#generations}): sealed batches written as immutable datasets under
 * {@code _mem_wal/<shard>/}, their seals, and what is pending above each shard's watermark. What ingest writes and a
 * merge-worker's scheduler reads.
 */
public final class TableGenerations {
    private static final Logger log = LoggerFactory.getLogger(TableGenerations.class);

    private final LanceIo lance;
    private final BufferAllocator allocator;
    private final GenerationCatalog catalog;
    private final GenerationWriter writer;
    private final ReadCatalog readCatalog;
    private final long addedColumnsRefreshMs;
    private final Runnable touched;

    TableGenerations(
            LanceIo lance,
            BufferAllocator allocator,
            GenerationCatalog catalog,
            GenerationWriter writer,
            ReadCatalog readCatalog,
            long addedColumnsRefreshMs,
            Runnable touched) {
        this.lance = lance;
        this.allocator = allocator;
        this.catalog = catalog;
        this.writer = writer;
        this.readCatalog = readCatalog;
        this.addedColumnsRefreshMs = addedColumnsRefreshMs;
        this.touched = touched;
    }

    /**
     * Writes a sealed batch of one partition as generation {@code lastOffset + 1}.
     *
     * @param rows the batch's usable records (offsets within [firstOffset, lastOffset]); duplicates of a
     *     record_id are removed here, highest offset wins
     * @param bytes serialized bytes of the batch, kept in the seal for the merge byte budget
     */
    public SealedGeneration write(
            String topic, int partition, long firstOffset, long lastOffset, List<RolloutRow> rows, long bytes) {
        try (GenerationBatch batch = newBatch()) {
            rows.stream()
                    .sorted(Comparator.comparingLong(RolloutRow::sourceOffset))
                    .forEach(batch::append);
            return write(topic, partition, firstOffset, lastOffset, batch, bytes, List.of());
        }
    }

    /**
     * Writes a sealed batch of one partition as generation {@code lastOffset + 1}; the batch stays open and
     * unchanged (a failed write can be retried with it).
     *
     * @param deadLettered records of the range the caller left out because a write refused them; kept in the seal
     */
    public SealedGeneration write(
            String topic,
            int partition,
            long firstOffset,
            long lastOffset,
            GenerationBatch batch,
            long bytes,
            List<SealedGeneration.DeadLettered> deadLettered) {
        touched.run();
        SealedGeneration sealed = writer.write(topic, partition, firstOffset, lastOffset, batch, bytes, deadLettered);
        readCatalog.invalidate(); // this process's own writes are readable at once
        addedColumnsReadAtMs = 0; // and the columns they added
        return sealed;
    }

    /**
     * Writes a pending generation's dataset again from the rows its seal describes, after its files were lost
     * (deleted by hand, a bucket lifecycle rule): the seal stays, so the generation keeps its number and place.
     */
    public void rewrite(SealedGeneration seal, GenerationBatch batch) {
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
        return new GenerationBatch(allocator, this::addedColumn, sizing);
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

    /** The sizes the table's last sealed batch reached: where its next batch's columns start. */
    private final BatchSizing sizing = new BatchSizing();

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
                        lance.location(),
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
    public List<SealedGeneration> pending(String shard) {
        long watermark = watermarks().getOrDefault(ShardId.requireValid(shard), 0L);
        return catalog.pending(shard, watermark).stream().map(catalog::seal).toList();
    }

    /**
     * The seal that starts exactly at {@code firstOffset}, if any: how a restarted writer finds a
     * generation it wrote but never announced (the chain continues from its committed position).
     */
    public Optional<SealedGeneration> startingAt(String shard, long firstOffset) {
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
    public List<Long> sealedBetween(String shard, long above, long upTo) {
        return catalog.sealed(ShardId.requireValid(shard)).stream()
                .map(GenerationCatalog.Listed::generation)
                .filter(g -> Long.compareUnsigned(g, above) > 0 && Long.compareUnsigned(g, upTo) <= 0)
                .sorted()
                .toList();
    }

    /** Pending generations of a shard above {@code watermark}: one listing, no seal reads. */
    public int pendingCount(String shard, long watermark) {
        return catalog.pending(ShardId.requireValid(shard), watermark).size();
    }
}
