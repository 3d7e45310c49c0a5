package dev.rolloutingest.table;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.lance.memwal.MergedGeneration;
import org.lance.merge.MergeInsertParams;
import org.lance.merge.MergeInsertResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One bounded merge pass of one shard: the oldest pending generations, at most N and at most a byte
 * budget, read and de-duplicated newest-wins, then one merge-insert that marks exactly them merged.
 *
 * <p>Guards for lance-core 7.0.0: mergeInsert silently accepts re-merges and out-of-order merges and then
 * overwrites newer data, so the watermark is re-read first and only generations above it are taken,
 * ascending. A source with duplicate keys fails ("Ambiguous merge inserts are prohibited"), so the union is
 * de-duplicated before the commit. Peak memory is the pass, never the backlog.
 */
final class MergePass {
    private static final Logger log = LoggerFactory.getLogger(MergePass.class);

    private final LanceIo lance;
    private final GenerationCatalog catalog;
    private final TableSettings settings;
    private final Timer readPhase;
    private final Timer commitPhase;

    MergePass(LanceIo lance, GenerationCatalog catalog, TableSettings settings, MeterRegistry meters) {
        this.lance = lance;
        this.catalog = catalog;
        this.settings = settings;
        this.readPhase = Timer.builder("rollout.merge.phase").tag("phase", "read")
                .description("Time of one merge pass's phases").register(meters);
        this.commitPhase = Timer.builder("rollout.merge.phase").tag("phase", "commit")
                .description("Time of one merge pass's phases").register(meters);
    }

    /**
     * @param maxGenerations at most this many generations (0 = unbounded)
     * @param maxBytes at most this many sealed bytes (0 = unbounded); the oldest generation is always
     *     taken, even alone over the budget, so a large generation cannot block its shard forever
     */
    MergeResult run(String shard, int maxGenerations, long maxBytes) {
        ShardId.requireValid(shard);
        if (maxGenerations < 0 || maxBytes < 0) {
            throw new IllegalArgumentException("maxGenerations and maxBytes must be >= 0");
        }
        try (Dataset base = lance.openBase()) {
            long watermark = MemWalWatermarks.read(base).getOrDefault(shard, 0L);
            List<GenerationCatalog.Listed> pending = catalog.pending(shard, watermark);
            List<SealedGeneration> chosen = new ArrayList<>();
            long bytes = 0;
            for (GenerationCatalog.Listed listed : pending) {
                if (maxGenerations > 0 && chosen.size() >= maxGenerations) {
                    break;
                }
                SealedGeneration seal = catalog.seal(listed);
                if (!chosen.isEmpty() && maxBytes > 0 && bytes + seal.bytes() > maxBytes) {
                    break;
                }
                chosen.add(seal);
                bytes += seal.bytes();
            }
            if (chosen.isEmpty()) {
                return MergeResult.nothing(shard, watermark);
            }
            long readStart = System.nanoTime();
            List<RolloutRow> rows = readNewestWins(chosen);
            Duration read = Duration.ofNanos(System.nanoTime() - readStart);
            readPhase.record(read);

            long commitStart = System.nanoTime();
            List<MergedGeneration> marks = chosen.stream().map(g -> new MergedGeneration(shard, g.generation())).toList();
            MergeInsertParams params = new MergeInsertParams(List.of(RolloutSchema.RECORD_ID))
                    .withMatchedUpdateIf(RowOrder.MERGE_CONDITION)
                    .withNotMatched(MergeInsertParams.WhenNotMatched.InsertAll)
                    .markGenerationsAsMerged(marks)
                    .withConflictRetries(settings.mergeConflictRetries());
            try (VectorSchemaRoot batch = ArrowRows.toRoot(lance.allocator(), rows);
                    ArrowArrayStream stream = lance.stream(batch)) {
                MergeInsertResult result = base.mergeInsert(params, stream);
                result.dataset().close();
            }
            Duration commit = Duration.ofNanos(System.nanoTime() - commitStart);
            commitPhase.record(commit);
            List<Long> merged = chosen.stream().map(SealedGeneration::generation).toList();
            long newWatermark = merged.get(merged.size() - 1);
            log.info("Table {} shard {}: merged {} generations ({}..{}), {} rows, watermark {} -> {}, read {} ms, commit {} ms, {} left",
                    lance.location(), shard, merged.size(), merged.get(0), newWatermark, rows.size(), watermark,
                    newWatermark, read.toMillis(), commit.toMillis(), pending.size() - chosen.size());
            return new MergeResult(shard, merged, watermark, newWatermark, rows.size(), bytes, read, commit,
                    pending.size() - chosen.size());
        }
    }

    private List<RolloutRow> readNewestWins(List<SealedGeneration> ascending) {
        Map<String, RolloutRow> newest = new LinkedHashMap<>();
        for (SealedGeneration generation : ascending) {
            String uri = lance.location().resolve(generation.datasetPath());
            try (Dataset dataset = lance.open(uri);
                    LanceScanner scanner = dataset.newScan(new ScanOptions.Builder().columns(RolloutSchema.allColumns()).build());
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    for (RolloutRow row : ArrowRows.fromRoot(reader.getVectorSchemaRoot())) {
                        newest.remove(row.recordId());
                        newest.put(row.recordId(), row);
                    }
                }
            } catch (RolloutTableException e) {
                throw e;
            } catch (Exception e) {
                throw new RolloutTableException.GenerationUnreadable(lance.location().uri(), generation.shard(),
                        generation.generation(), generation.folder(), e);
            }
        }
        return new ArrayList<>(newest.values());
    }
}
