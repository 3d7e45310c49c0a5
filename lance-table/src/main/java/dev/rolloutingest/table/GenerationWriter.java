package dev.rolloutingest.table;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes one sealed batch as an immutable generation dataset, then its seal file.
 *
 * <p>Replays are safe: the dataset is written in CREATE mode (never APPEND, which would duplicate rows),
 * and an existing generation with the same offset range is accepted after checking its row count.
 */
final class GenerationWriter {
    private static final Logger log = LoggerFactory.getLogger(GenerationWriter.class);

    private final LanceIo lance;
    private final ObjectStore store;
    private final Timer writeTimer;
    private final MeterRegistry meters;

    GenerationWriter(LanceIo lance, ObjectStore store, MeterRegistry meters) {
        this.lance = lance;
        this.store = store;
        this.meters = meters;
        this.writeTimer = Timer.builder("rollout.generation.write")
                .description("Time to write one generation dataset and its seal").register(meters);
    }

    /**
     * Keeps the row with the highest source offset per record_id. lance-core 7.0.0 returns a stale row
     * on full scans when one generation holds a key twice, so every batch passes through here.
     */
    static List<RolloutRow> deduplicate(List<RolloutRow> rows) {
        Map<String, RolloutRow> newest = new LinkedHashMap<>();
        for (RolloutRow row : rows) {
            newest.merge(row.recordId(), row, (a, b) -> b.sourceOffset() >= a.sourceOffset() ? b : a);
        }
        List<RolloutRow> unique = new ArrayList<>(newest.values());
        unique.sort(Comparator.comparingLong(RolloutRow::sourceOffset));
        return unique;
    }

    SealedGeneration write(String topic, int partition, long firstOffset, long lastOffset, List<RolloutRow> rows,
            long bytes) {
        if (rows.isEmpty()) {
            throw new IllegalArgumentException("a generation needs at least one row");
        }
        for (RolloutRow row : rows) {
            if (row.sourcePartition() != partition || row.sourceOffset() < firstOffset || row.sourceOffset() > lastOffset) {
                throw new IllegalArgumentException("row " + row.recordId() + " at " + row.sourcePartition() + "/"
                        + row.sourceOffset() + " lies outside the batch " + partition + "/[" + firstOffset + ", "
                        + lastOffset + "]");
            }
        }
        List<RolloutRow> unique = deduplicate(rows);
        SealedGeneration sealed = SealedGeneration.of(topic, partition, firstOffset, lastOffset, unique.size(), bytes,
                Instant.now());
        return writeTimer.record(() -> writeAndSeal(sealed, unique));
    }

    private SealedGeneration writeAndSeal(SealedGeneration sealed, List<RolloutRow> unique) {
        String uri = lance.location().resolve(sealed.datasetPath());
        byte[] existingSeal = store.get(sealed.sealPath());
        if (existingSeal != null) {
            // Replay of a generation that was sealed before a crash or by a fenced owner.
            return acceptReplay(sealed, existingSeal);
        }
        try (VectorSchemaRoot batch = ArrowRows.toRoot(lance.allocator(), unique);
                Dataset ignored = lance.create(uri, batch)) {
            meters.counter("rollout.generation.rows").increment(unique.size());
        } catch (RuntimeException e) {
            if (!LanceIo.isAlreadyExists(e)) {
                throw new RolloutTableException("Table " + lance.location() + " shard " + sealed.shard() + " generation "
                        + sealed.generation() + ": writing " + sealed.folder() + " failed: " + e.getMessage(), e);
            }
            adoptUnsealedDataset(sealed, unique, uri);
        }
        store.put(sealed.sealPath(), sealed.toJson());
        return sealed;
    }

    /** The dataset exists without a seal: a crash between write and seal. Keep it if whole, else rewrite. */
    private void adoptUnsealedDataset(SealedGeneration sealed, List<RolloutRow> unique, String uri) {
        long rows;
        try (Dataset existing = lance.open(uri)) {
            rows = existing.countRows();
        } catch (RuntimeException unreadable) {
            log.warn("Table {} shard {} generation {}: unsealed folder {} is unreadable ({}); rewriting it",
                    lance.location(), sealed.shard(), sealed.generation(), sealed.folder(), unreadable.getMessage());
            store.delete(sealed.datasetPath());
            try (VectorSchemaRoot batch = ArrowRows.toRoot(lance.allocator(), unique);
                    Dataset ignored = lance.create(uri, batch)) {
                return;
            }
        }
        if (rows != unique.size()) {
            throw new RolloutTableException.GenerationConflict(lance.location().uri(), sealed.shard(), sealed.generation(),
                    "unsealed folder " + sealed.folder() + " holds " + rows + " rows, the replayed batch " + unique.size());
        }
        log.info("Table {} shard {} generation {}: adopted the unsealed dataset {} written before a restart",
                lance.location(), sealed.shard(), sealed.generation(), sealed.folder());
    }

    private SealedGeneration acceptReplay(SealedGeneration expected, byte[] sealJson) {
        SealedGeneration existing;
        try {
            existing = SealedGeneration.fromJson(sealJson);
        } catch (java.io.IOException e) {
            throw new RolloutTableException.GenerationConflict(lance.location().uri(), expected.shard(),
                    expected.generation(), "seal file " + expected.sealPath() + " is corrupt: " + e.getMessage());
        }
        if (existing.firstOffset() != expected.firstOffset() || existing.lastOffset() != expected.lastOffset()
                || existing.rows() != expected.rows()) {
            throw new RolloutTableException.GenerationConflict(lance.location().uri(), expected.shard(),
                    expected.generation(), "already sealed with offsets [" + existing.firstOffset() + ", "
                            + existing.lastOffset() + "] and " + existing.rows() + " rows; the replay has ["
                            + expected.firstOffset() + ", " + expected.lastOffset() + "] and " + expected.rows());
        }
        log.info("Table {} shard {} generation {}: already sealed with the same offsets, replay accepted",
                lance.location(), expected.shard(), expected.generation());
        return existing;
    }
}
