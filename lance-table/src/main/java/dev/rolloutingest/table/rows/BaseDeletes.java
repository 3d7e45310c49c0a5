package dev.rolloutingest.table.rows;

import dev.rolloutingest.table.storage.BatchReader;
import dev.rolloutingest.table.storage.LanceIo;
import java.util.List;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.lance.WriteParams;

/**
 * The merged deletes, kept beside the base as a Lance dataset of their own ({@value #FOLDER} under the table root), so
 * that the base and its tags hold live rows only: a plain Lance reader of either never sees a deleted record. Each row
 * is a delete as a generation held it ({@link Tombstones}: the record_id, its source partition, offset and ingest time),
 * the order a value of the key that merges later is checked against ({@link NewestWins}). A merge appends its deletes
 * here after its base commit and before its marks (so every delete kept was applied by a base version, and one a base
 * version applied that is not kept yet is still pending); maintenance drops those no older value can reach. A round
 * merged again after its marks failed finds its deletes kept and does not append them twice.
 *
 * <p>Lance's cleanup of the base leaves the folder alone: it removes only what it finds under its own folders
 * ({@code data/}, {@code _versions/}, {@code _deletions/}, {@code _indices/}, {@code _transactions/}), as it leaves
 * {@code _mem_wal/} (checked by a test).
 */
public final class BaseDeletes {
    /** The folder of the deletes dataset, under the table root. */
    public static final String FOLDER = "_deletes";

    private BaseDeletes() {}

    public static String uri(LanceIo lance) {
        return lance.location().resolve(FOLDER);
    }

    /** The deletes at their latest version, or null when no delete was ever merged. The caller closes it. */
    public static Dataset open(LanceIo lance) {
        try {
            return lance.open(uri(lance));
        } catch (RuntimeException e) {
            if (LanceIo.isNotFound(e) || String.valueOf(e.getMessage()).contains("does not exist")) {
                return null;
            }
            throw e;
        }
    }

    /** Delete rows kept (a delete appended twice counts twice: see the class comment). */
    public static long count(LanceIo lance) {
        try (Dataset deletes = open(lance)) {
            return deletes == null ? 0 : deletes.countRows();
        }
    }

    /**
     * Appends batches of delete rows in {@link RolloutSchema#SCHEMA}, creating the dataset with the first; one Lance
     * append a batch, each rebased by lance over appends of other committers.
     */
    public static void append(LanceIo lance, List<VectorSchemaRoot> batches) {
        for (VectorSchemaRoot batch : batches) {
            if (batch.getRowCount() == 0) {
                continue;
            }
            try (BatchReader reader = new BatchReader(lance.allocator(), batch);
                    Dataset written = Dataset.write()
                            .allocator(lance.allocator())
                            .reader(reader)
                            .uri(uri(lance))
                            .mode(WriteParams.WriteMode.APPEND)
                            .storageOptions(lance.location().storageOptions())
                            .execute()) {
                // written: nothing more to do with the handle
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw LanceIo.unchecked(e);
            }
        }
    }
}
