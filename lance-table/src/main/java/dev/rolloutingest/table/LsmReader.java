package dev.rolloutingest.table;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * get and list over the base table plus every shard's pending generations, newest wins.
 *
 * <p>Every read samples each shard's pending count into {@code rollout_wal_pending_generations}, warns
 * once per shard per read at the warn threshold, and fails fast above the hard cap: a point lookup costs
 * about 1.5 ms per pending generation in lance-core 7.0.0 and a backlog of thousands exhausts memory.
 * Reads open their own dataset handle and never wait on a merge.
 */
final class LsmReader {
    private static final Logger log = LoggerFactory.getLogger(LsmReader.class);

    private final LanceIo lance;
    private final GenerationCatalog catalog;
    private final TableSettings settings;
    private final DistributionSummary pendingPerShard;
    private final Counter backlogWarnings;
    private final Counter backlogRejections;

    LsmReader(LanceIo lance, GenerationCatalog catalog, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.catalog = catalog;
        this.settings = settings;
        // Count buckets 8..4096; no shard label (cardinality), one sample per shard per read.
        this.pendingPerShard = DistributionSummary.builder("rollout.wal.pending.generations")
                .description("Pending (unmerged) generations per shard, sampled on every read")
                .serviceLevelObjectives(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
                .register(meters);
        this.backlogWarnings = Counter.builder("rollout.wal.pending.warnings")
                .description("Reads that found a shard at or over the pending warn threshold").register(meters);
        this.backlogRejections = Counter.builder("rollout.wal.pending.rejections")
                .description("Reads refused because a shard was over the pending hard cap").register(meters);
    }

    /** Pending generations of every shard, each shard's ascending, after sampling and checking the counts. */
    List<GenerationCatalog.Listed> pending(Dataset base) {
        Map<String, Long> watermarks = MemWalWatermarks.read(base);
        Map<String, List<GenerationCatalog.Listed>> sealed = new java.util.TreeMap<>(catalog.sealedByShard());
        // Shards merged and garbage-collected to nothing have no seal left but still count: 0 pending.
        watermarks.keySet().forEach(shard -> sealed.putIfAbsent(shard, List.of()));
        List<GenerationCatalog.Listed> all = new ArrayList<>();
        for (Map.Entry<String, List<GenerationCatalog.Listed>> shard : sealed.entrySet()) {
            // Everything at or below the watermark is in the base already and stays out.
            long watermark = watermarks.getOrDefault(shard.getKey(), 0L);
            List<GenerationCatalog.Listed> pending = shard.getValue().stream()
                    .filter(g -> Long.compareUnsigned(g.generation(), watermark) > 0).toList();
            observe(shard.getKey(), pending.size());
            all.addAll(pending);
        }
        return all;
    }

    /**
     * Newest first: shards are independent key spaces only by convention (a record_id lands in the shard
     * of its partition), so the order across shards is by generation number, which is the offset order
     * within a shard. Older values must never win.
     */
    private static List<GenerationCatalog.Listed> newestFirst(List<GenerationCatalog.Listed> pending) {
        List<GenerationCatalog.Listed> sorted = new ArrayList<>(pending);
        sorted.sort(java.util.Comparator.comparingLong(GenerationCatalog.Listed::generation).reversed());
        return sorted;
    }

    private void observe(String shard, int pending) {
        pendingPerShard.record(pending);
        if (settings.pendingWarnGenerations() > 0 && pending >= settings.pendingWarnGenerations()) {
            backlogWarnings.increment();
            log.warn("Table {} shard {} has {} pending generations (warn at {}, {}): each read opens all of them; "
                    + "check the merge-worker", lance.location(), shard, pending, settings.pendingWarnGenerations(),
                    TableSettings.PENDING_WARN_KEY);
        }
        if (settings.pendingMaxGenerations() > 0 && pending > settings.pendingMaxGenerations()) {
            backlogRejections.increment();
            throw new RolloutTableException.PendingBacklogTooLarge(lance.location().uri(), shard, pending,
                    settings.pendingMaxGenerations(), TableSettings.PENDING_MAX_KEY);
        }
    }

    /**
     * Point lookup: the pending generations newest first, then the base. Each generation holds a key at
     * most once (batches are de-duplicated before writing), so the first hit is the newest value.
     *
     * <p>Why not lance's LsmScanner / LsmPointLookupPlanner: in 7.0.0 they open the generation datasets
     * without the table's storage options, so on S3 with an explicit endpoint or region they fail
     * ("Failed to resolve region for bucket"). Opening each generation here with the options works on
     * every store, and costs the same one dataset open per pending generation.
     */
    Optional<RolloutRow> get(String recordId) {
        String filter = RolloutSchema.RECORD_ID + " = " + sqlString(recordId);
        try (Dataset base = lance.openBase()) {
            for (GenerationCatalog.Listed generation : newestFirst(pending(base))) {
                Optional<RolloutRow> hit = first(row -> forEachRow(generation, filter, RolloutSchema.allColumns(), row));
                if (hit.isPresent()) {
                    return hit;
                }
            }
            return first(row -> forEachRow(base, filter, RolloutSchema.allColumns(), row));
        }
    }

    /**
     * A page of rows, newest value per key. Pending generations are read newest first and every key seen
     * there hides older versions; the filter is applied only after that, so a replaced row never matches.
     * Only the base scan gets the filter pushed down, since nothing older than the base can hide a row.
     * Memory: the record ids of the pending rows, bounded by the pending hard cap.
     */
    List<RolloutRow> list(ListQuery query) {
        int limit = Math.min(query.limit(), settings.maxListLimit());
        List<String> columns = query.includePayload() ? RolloutSchema.allColumns() : RolloutSchema.columnsWithoutPayload();
        Page page = new Page(query, limit);
        Set<String> seen = new HashSet<>();
        try (Dataset base = lance.openBase()) {
            for (GenerationCatalog.Listed generation : newestFirst(pending(base))) {
                if (page.full()) {
                    return page.rows;
                }
                forEachRow(generation, null, columns, row -> {
                    if (seen.add(row.recordId())) {
                        page.offer(row);
                    }
                    return true;
                });
            }
            if (!page.full()) {
                forEachRow(base, query.baseFilter(), columns, row -> {
                    if (!seen.contains(row.recordId())) {
                        page.offer(row);
                    }
                    return !page.full();
                });
            }
        }
        return page.rows;
    }

    /** Rows visible to readers (base + pending, de-duplicated). A full count: for tests and status. */
    long countRows() {
        Set<String> seen = new HashSet<>();
        long[] baseOnly = {0};
        List<String> keyOnly = List.of(RolloutSchema.RECORD_ID);
        try (Dataset base = lance.openBase()) {
            for (GenerationCatalog.Listed generation : pending(base)) {
                forEachRow(generation, null, keyOnly, row -> seen.add(row.recordId()) || true);
            }
            forEachRow(base, null, keyOnly, row -> {
                if (!seen.contains(row.recordId())) {
                    baseOnly[0]++;
                }
                return true;
            });
        }
        return seen.size() + baseOnly[0];
    }

    /** Collects a page: skips the query's offset of matching rows, then takes up to the limit. */
    private static final class Page {
        final List<RolloutRow> rows = new ArrayList<>();
        private final ListQuery query;
        private final int limit;
        private long skipped;

        Page(ListQuery query, int limit) {
            this.query = query;
            this.limit = limit;
        }

        void offer(RolloutRow row) {
            if (full() || !query.matches(row)) {
                return;
            }
            if (skipped < query.offset()) {
                skipped++;
                return;
            }
            rows.add(row);
        }

        boolean full() {
            return rows.size() >= limit;
        }
    }

    /** The first row a row source yields, stopping it there. */
    private static Optional<RolloutRow> first(java.util.function.Consumer<java.util.function.Predicate<RolloutRow>> source) {
        java.util.concurrent.atomic.AtomicReference<RolloutRow> found = new java.util.concurrent.atomic.AtomicReference<>();
        source.accept(row -> {
            found.set(row);
            return false;
        });
        return Optional.ofNullable(found.get());
    }

    private void forEachRow(GenerationCatalog.Listed generation, String filter, List<String> columns,
            java.util.function.Predicate<RolloutRow> consumer) {
        String uri = lance.location().resolve(generation.datasetPath());
        try (Dataset dataset = lance.open(uri)) {
            forEachRow(dataset, filter, columns, consumer);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException.GenerationUnreadable(lance.location().uri(), generation.shard(),
                    generation.generation(), generation.folder(), e);
        }
    }

    /** Streams rows in batches; the consumer returns false to stop early. */
    private void forEachRow(Dataset dataset, String filter, List<String> columns,
            java.util.function.Predicate<RolloutRow> consumer) {
        ScanOptions.Builder options = new ScanOptions.Builder().columns(columns).batchSize(1024);
        if (filter != null) {
            options.filter(filter);
        }
        try (LanceScanner scanner = dataset.newScan(options.build()); ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                for (int i = 0; i < root.getRowCount(); i++) {
                    if (!consumer.test(ArrowRows.read(root, i))) {
                        return;
                    }
                }
            }
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException("Table " + lance.location() + ": scan failed: " + e.getMessage(), e);
        }
    }

    /**
     * A string literal for a Lance filter that survives the JNI boundary: lance-core 7.0.0 receives filter
     * text as Java's modified UTF-8, in which a NUL or a character outside the Basic Multilingual Plane
     * (emoji) is not valid UTF-8 and the scan fails. Such values travel as hex bytes and are cast back;
     * DataFusion folds the cast into a plain literal, so a scalar index on the column is still used.
     */
    static String sqlString(String value) {
        boolean safe = value.chars().allMatch(c -> c != 0 && !Character.isSurrogate((char) c));
        if (safe) {
            return "'" + value.replace("'", "''") + "'";
        }
        return "arrow_cast(decode('" + java.util.HexFormat.of().formatHex(value.getBytes(StandardCharsets.UTF_8))
                + "', 'hex'), 'Utf8')";
    }
}
