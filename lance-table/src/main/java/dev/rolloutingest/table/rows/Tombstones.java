package dev.rolloutingest.table.rows;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.table.storage.LanceIo;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A delete of one record_id as a generation holds it: a row of the record_id with every other value empty and the
 * metadata entry {@value #MARKER}. It takes part in newest-wins like any row (within a partition the higher offset,
 * across partitions the later ingested_at), so a delete hides older values and a later put hides it. Reads return
 * nothing for a key whose newest row is a tombstone, pending or merged: a merge removes the base rows it is newer than
 * and keeps it beside the base ({@link BaseDeletes}), so a value older than it that merges later loses to it while a
 * plain reader of the base sees live rows only; maintenance drops it once no older value can merge. The marker is reserved: a produced record whose metadata holds it is dead-lettered ({@link
 * #RESERVED_REASON}).
 */
public final class Tombstones {
    /** The metadata key that marks a row as a delete; producers may not use it. */
    public static final String MARKER = "__rollout_deleted";

    private static final byte[] MARKER_BYTES = MARKER.getBytes(StandardCharsets.UTF_8);

    public static final String RESERVED_REASON = "reserved-metadata-key";

    private Tombstones() {}

    /** The delete of {@code recordId} as a row. */
    public static Rollout of(String recordId, Instant at) {
        return Rollout.newBuilder()
                .setRecordId(recordId)
                .setExperiment("")
                .setRolloutId("")
                .setSequenceOrder(0)
                .setRole("")
                .setCreatedAt(at)
                .setInputTokens(List.of())
                .setOutputTokens(List.of())
                .setOutputLogprobs(List.of())
                .setIncludeInTraining(false)
                .setMetadata(Map.of(MARKER, "true"))
                .build();
    }

    public static boolean is(Rollout rollout) {
        return rollout.getExperiment().length() == 0
                && rollout.getMetadata() != null
                && rollout.getMetadata().keySet().stream().anyMatch(k -> MARKER.contentEquals(k));
    }

    /**
     * A filter that every delete row matches (and few other rows: a produced record with an empty experiment and
     * rollout_id); {@link #is(VectorSchemaRoot, int)} tells them apart. lance-core 7.0.0's filters cannot look into
     * the metadata column (a list of key/value structs: {@code map_keys} and indexing refuse it).
     */
    public static final String CANDIDATES =
            RolloutSchema.EXPERIMENT + " = '' AND " + RolloutSchema.ROLLOUT_ID + " = ''";

    /** Delete rows of a base version (kept until no older value can arrive: TableMaintenance.dropDeletes). */
    public static long count(Dataset base) {
        long[] count = {0};
        forEach(base, CANDIDATES, (batch, i) -> count[0]++);
        return count[0];
    }

    /**
     * Calls {@code action} for each delete row among the rows matching {@code filter}, the batch holding its record_id,
     * ingested_at, source_partition, source_offset and row address ({@code _rowaddr}).
     */
    public static void forEach(
            Dataset base, String filter, java.util.function.ObjIntConsumer<VectorSchemaRoot> action) {
        try (LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of(
                                RolloutSchema.RECORD_ID,
                                RolloutSchema.EXPERIMENT,
                                RolloutSchema.METADATA,
                                RolloutSchema.INGESTED_AT,
                                RolloutSchema.SOURCE_PARTITION,
                                RolloutSchema.SOURCE_OFFSET))
                        .withRowAddress(true)
                        .filter(filter)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                for (int i = 0; i < batch.getRowCount(); i++) {
                    if (is(batch, i)) {
                        action.accept(batch, i);
                    }
                }
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw LanceIo.unchecked(e);
        }
    }

    /** Row {@code i} of a batch with the experiment and metadata columns; an empty experiment is checked first. */
    public static boolean is(VectorSchemaRoot batch, int i) {
        VarCharVector experiment = (VarCharVector) batch.getVector(RolloutSchema.EXPERIMENT);
        if (experiment == null || experiment.isNull(i) || experiment.getValueLength(i) != 0) {
            return false;
        }
        FieldVector vector = batch.getVector(RolloutSchema.METADATA);
        if (vector == null || vector.isNull(i)) {
            return false;
        }
        ListVector list = (ListVector) vector;
        VarCharVector keys = (VarCharVector) ((StructVector) list.getDataVector()).getChild("key");
        for (int k = list.getElementStartIndex(i); k < list.getElementEndIndex(i); k++) {
            if (Arrays.equals(keys.get(k), MARKER_BYTES)) {
                return true;
            }
        }
        return false;
    }
}
