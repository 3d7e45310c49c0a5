package dev.rolloutingest.table.generations;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.ObjectStore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes one sealed batch as an immutable generation dataset, then its seal file.
 *
 * <p>Replays are safe: the dataset is written in CREATE mode (never APPEND, which would duplicate rows),
 * and an existing generation with the same offset range is accepted after checking its row count.
 */
public final class GenerationWriter {
    private static final Logger log = LoggerFactory.getLogger(GenerationWriter.class);

    private final LanceIo lance;
    private final ObjectStore store;
    private final Timer writeTimer;
    private final MeterRegistry meters;

    public GenerationWriter(LanceIo lance, ObjectStore store, MeterRegistry meters) {
        this.lance = lance;
        this.store = store;
        this.meters = meters;
        this.writeTimer = Timer.builder("rollout.generation.write")
                .description("Time to write one generation dataset and its seal")
                .register(meters);
    }

    public SealedGeneration write(
            String topic,
            int partition,
            long firstOffset,
            long lastOffset,
            GenerationBatch batch,
            long bytes,
            List<SealedGeneration.DeadLettered> deadLettered) {
        if (batch.isEmpty()) {
            throw new IllegalArgumentException("a generation needs at least one row");
        }
        if (batch.offsetAt(0) < firstOffset || batch.offsetAt(batch.size() - 1) > lastOffset) {
            throw new IllegalArgumentException(
                    "rows at offsets [" + batch.offsetAt(0) + ", " + batch.offsetAt(batch.size() - 1)
                            + "] lie outside the batch " + partition + "/[" + firstOffset + ", " + lastOffset + "]");
        }
        Set<String> keys = batch.recordIds();
        SealedGeneration sealed = SealedGeneration.of(
                topic,
                partition,
                firstOffset,
                lastOffset,
                keys.size(),
                bytes,
                Instant.now(),
                deadLettered,
                KeyFilter.of(keys));
        return writeTimer.record(() -> writeAndSeal(sealed, batch));
    }

    private SealedGeneration writeAndSeal(SealedGeneration sealed, GenerationBatch batch) {
        String uri = lance.location().resolve(sealed.datasetPath());
        byte[] existingSeal = store.get(sealed.sealPath());
        if (existingSeal != null) {
            // Replay of a generation that was sealed before a crash or by a fenced owner.
            return acceptReplay(sealed, existingSeal);
        }
        GenerationBatch unique = batch.newestPerKey();
        try {
            // the base first: it never lacks a column a generation has (AddedColumns)
            unique.conformTo(AddedColumns.addToBase(lance, unique.addedFields()));
            try {
                create(uri, sealed, unique);
                meters.counter("rollout.generation.rows").increment(unique.size());
            } catch (RuntimeException e) {
                if (!LanceIo.isAlreadyExists(e)) {
                    throw new RolloutTableException(
                            "Table " + lance.location() + " shard " + sealed.shard() + " generation "
                                    + sealed.generation() + ": writing " + sealed.folder() + " failed: "
                                    + e.getMessage(),
                            e);
                }
                adoptUnsealedDataset(sealed, unique, uri);
            }
        } finally {
            if (unique != batch) {
                unique.close();
            }
        }
        store.put(sealed.sealPath(), sealed.toJson());
        return sealed;
    }

    /** Creates the generation's dataset (CREATE only) and the file of its key columns beside it. */
    private void create(String uri, SealedGeneration generation, GenerationBatch rows) {
        VectorSchemaRoot root = rows.sealedRoot();
        try (Dataset created = lance.create(uri, root)) {
            GenerationKeyColumns.write(store, generation, root, created);
        }
    }

    /**
     * Writes a sealed generation's dataset again after its files were lost, the seal kept as it is: the
     * rows must be the ones the seal describes (re-read from the topic), checked by their count.
     */
    public void rewrite(SealedGeneration seal, GenerationBatch batch) {
        GenerationBatch unique = batch.newestPerKey();
        try {
            if (unique.size() != seal.rows()) {
                throw new RolloutTableException.GenerationConflict(
                        lance.location().uri(),
                        seal.shard(),
                        seal.generation(),
                        "the seal says " + seal.rows() + " rows, the re-read range holds " + unique.size());
            }
            store.delete(seal.datasetPath());
            String uri = lance.location().resolve(seal.datasetPath());
            unique.conformTo(AddedColumns.addToBase(lance, unique.addedFields()));
            create(uri, seal, unique);
            log.info(
                    "Table {} shard {} generation {}: dataset {} written again from its offsets [{}..{}], {} rows",
                    lance.location(),
                    seal.shard(),
                    seal.generation(),
                    seal.folder(),
                    seal.firstOffset(),
                    seal.lastOffset(),
                    unique.size());
        } finally {
            if (unique != batch) {
                unique.close();
            }
        }
    }

    /** A row a write refused on its own, found by {@link #findUnwritableRows}. */
    public record UnwritableRow(long offset, String error) {}

    /**
     * Which rows make a write of this batch fail, found by writing it to an in-memory dataset (never the
     * table) and halving the part that fails down to single rows. Empty when the whole batch writes there:
     * then the failure is the table's store, not the data. Costs O(k log n) in-memory writes for k bad rows.
     */
    public List<UnwritableRow> findUnwritableRows(GenerationBatch batch) {
        List<UnwritableRow> found = new ArrayList<>();
        Map<String, Field> baseColumns = new HashMap<>();
        try (Dataset base = lance.openBase()) {
            AddedColumns.of(base.getSchema()).forEach(f -> baseColumns.put(f.getName(), f));
        }
        probe(batch, 0, batch.size(), baseColumns, found);
        return found;
    }

    private void probe(
            GenerationBatch batch, int from, int to, Map<String, Field> baseColumns, List<UnwritableRow> found) {
        String error;
        try (GenerationBatch part = batch.slice(from, to)) {
            error = conflictWithBase(part, baseColumns);
            if (error == null) {
                error = probeWrite(part);
            }
        }
        if (error == null) {
            return;
        }
        if (to - from == 1) {
            found.add(new UnwritableRow(batch.offsetAt(from), error));
            return;
        }
        int middle = (from + to) >>> 1;
        probe(batch, from, middle, baseColumns, found);
        probe(batch, middle, to, baseColumns, found);
    }

    /**
     * A column producers added that the part carries (a row of it has a value) in a type the base's column of that
     * name cannot take: another producer added the column first, with another type.
     */
    private static String conflictWithBase(GenerationBatch part, Map<String, Field> baseColumns) {
        for (Field field : part.addedFields()) {
            Field column = baseColumns.get(field.getName());
            if (column != null && AddedColumns.conflict(column, field) != null) {
                return AddedColumns.REFUSED_REASON + ": " + AddedColumns.conflict(column, field);
            }
        }
        return null;
    }

    /** Writes the batch to a throwaway in-memory dataset; the error message, or null when it wrote. */
    private String probeWrite(GenerationBatch part) {
        String uri = "memory://probe-" + UUID.randomUUID();
        try (Dataset ignored = lance.createInMemory(uri, part.sealedRoot())) {
            return null;
        } catch (RuntimeException e) {
            return String.valueOf(e.getMessage());
        }
    }

    /** The dataset exists without a seal: a crash between write and seal. Keep it if whole, else rewrite. */
    private void adoptUnsealedDataset(SealedGeneration sealed, GenerationBatch unique, String uri) {
        long rows;
        try (Dataset existing = lance.open(uri)) {
            rows = existing.countRows();
        } catch (RuntimeException unreadable) {
            log.warn(
                    "Table {} shard {} generation {}: unsealed folder {} is unreadable ({}); rewriting it",
                    lance.location(),
                    sealed.shard(),
                    sealed.generation(),
                    sealed.folder(),
                    unreadable.getMessage());
            store.delete(sealed.datasetPath());
            create(uri, sealed, unique);
            return;
        }
        if (rows != unique.size()) {
            throw new RolloutTableException.GenerationConflict(
                    lance.location().uri(),
                    sealed.shard(),
                    sealed.generation(),
                    "unsealed folder " + sealed.folder() + " holds " + rows + " rows, the replayed batch "
                            + unique.size());
        }
        log.info(
                "Table {} shard {} generation {}: adopted the unsealed dataset {} written before a restart",
                lance.location(),
                sealed.shard(),
                sealed.generation(),
                sealed.folder());
    }

    private SealedGeneration acceptReplay(SealedGeneration expected, byte[] sealJson) {
        SealedGeneration existing;
        try {
            existing = SealedGeneration.fromJson(sealJson);
        } catch (IOException e) {
            throw new RolloutTableException.GenerationConflict(
                    lance.location().uri(),
                    expected.shard(),
                    expected.generation(),
                    "seal file " + expected.sealPath() + " is corrupt: " + e.getMessage());
        }
        if (existing.firstOffset() != expected.firstOffset()
                || existing.lastOffset() != expected.lastOffset()
                || existing.rows() != expected.rows()) {
            throw new RolloutTableException.GenerationConflict(
                    lance.location().uri(),
                    expected.shard(),
                    expected.generation(),
                    "already sealed with offsets [" + existing.firstOffset() + ", "
                            + existing.lastOffset() + "] and " + existing.rows() + " rows; the replay has ["
                            + expected.firstOffset() + ", " + expected.lastOffset() + "] and " + expected.rows());
        }
        log.info(
                "Table {} shard {} generation {}: already sealed with the same offsets, replay accepted",
                lance.location(),
                expected.shard(),
                expected.generation());
        return existing;
    }
}
