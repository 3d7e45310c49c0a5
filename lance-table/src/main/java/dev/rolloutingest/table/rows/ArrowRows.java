package dev.rolloutingest.table.rows;

import static dev.rolloutingest.table.rows.RolloutSchema.*;

import dev.rolloutingest.schemas.Rollout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.LargeVarBinaryVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;

/** Converts rows to Arrow batches of {@link RolloutSchema#SCHEMA} and back. */
public final class ArrowRows {
    private ArrowRows() {}

    /** A batch holding the rows in order; the caller closes it. */
    public static VectorSchemaRoot toRoot(BufferAllocator allocator, List<RolloutRow> rows) {
        VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
        try {
            root.allocateNew();
            RowWriter writer = new RowWriter(root);
            for (int i = 0; i < rows.size(); i++) {
                RolloutRow row = rows.get(i);
                writer.write(i, row.rollout(), row.sourcePartition(), row.sourceOffset(), row.ingestedAt());
            }
            root.setRowCount(rows.size());
            return root;
        } catch (RuntimeException e) {
            root.close();
            throw e;
        }
    }

    /**
     * Why the table cannot hold this rollout, or null when it can. Every conversion {@link RowWriter#write} does
     * that can fail on a value is checked here, so a row refused here never reaches a seal.
     */
    public static String unrepresentable(Rollout rollout) {
        if (rollout.getCreatedAt() == null) {
            return "created_at is missing";
        }
        try {
            Timestamps.micros(rollout.getCreatedAt());
        } catch (ArithmeticException e) {
            return "created_at " + rollout.getCreatedAt() + " is outside the microsecond range of the table";
        }
        return null;
    }

    /** Reads every row of a batch; columns missing from the batch (projection) come back as their defaults. */
    public static List<RolloutRow> fromRoot(VectorSchemaRoot root) {
        List<RolloutRow> rows = new ArrayList<>(root.getRowCount());
        for (int i = 0; i < root.getRowCount(); i++) {
            rows.add(read(root, i));
        }
        return rows;
    }

    public static RolloutRow read(VectorSchemaRoot root, int i) {
        Rollout.Builder b = Rollout.newBuilder()
                .setRecordId(string(root, RECORD_ID, i))
                .setExperiment(orEmpty(string(root, EXPERIMENT, i)))
                .setRolloutId(orEmpty(string(root, ROLLOUT_ID, i)))
                .setProblemId(string(root, PROBLEM_ID, i))
                .setSequenceOrder(
                        root.getVector(SEQUENCE_ORDER) == null
                                ? 0
                                : ((IntVector) root.getVector(SEQUENCE_ORDER)).get(i))
                .setRole(orEmpty(string(root, ROLE, i)))
                .setCreatedAt(timestamp(root, CREATED_AT, i))
                .setContent(string(root, CONTENT, i))
                .setInputTokens(list(root, INPUT_TOKENS, i))
                .setOutputTokens(list(root, OUTPUT_TOKENS, i))
                .setOutputLogprobs(list(root, OUTPUT_LOGPROBS, i))
                .setReward(floatOrNull(root, REWARD, i))
                .setAdvantage(floatOrNull(root, ADVANTAGE, i))
                .setPolicyVersion(
                        root.getVector(POLICY_VERSION) == null
                                        || root.getVector(POLICY_VERSION).isNull(i)
                                ? null
                                : ((BigIntVector) root.getVector(POLICY_VERSION)).get(i))
                .setIncludeInTraining(root.getVector(INCLUDE_IN_TRAINING) == null
                        || ((BitVector) root.getVector(INCLUDE_IN_TRAINING)).get(i) == 1)
                .setMetadata(metadataAt(root, i));
        FieldVector payload = root.getVector(BINARY_PAYLOAD);
        b.setBinaryPayload(
                payload == null || payload.isNull(i) ? null : ByteBuffer.wrap(((LargeVarBinaryVector) payload).get(i)));
        int partition =
                root.getVector(SOURCE_PARTITION) == null ? -1 : ((IntVector) root.getVector(SOURCE_PARTITION)).get(i);
        long offset =
                root.getVector(SOURCE_OFFSET) == null ? -1 : ((BigIntVector) root.getVector(SOURCE_OFFSET)).get(i);
        return new RolloutRow(b.build(), partition, offset, timestamp(root, INGESTED_AT, i), added(root, i));
    }

    /** The values of the columns producers added, by name (null where the row has none). */
    private static Map<String, Object> added(VectorSchemaRoot root, int i) {
        Map<String, Object> values = null;
        for (FieldVector vector : root.getFieldVectors()) {
            if (!AddedColumns.contract(vector.getName())) {
                if (values == null) {
                    values = new LinkedHashMap<>();
                }
                values.put(vector.getName(), AddedValues.valueAt(vector, i));
            }
        }
        return values == null ? Map.of() : Collections.unmodifiableMap(values);
    }

    private static String orEmpty(String s) {
        return s == null ? "" : s;
    }

    public static String stringAt(VectorSchemaRoot root, String column, int i) {
        return string(root, column, i);
    }

    private static String string(VectorSchemaRoot root, String column, int i) {
        FieldVector vector = root.getVector(column);
        if (vector == null || vector.isNull(i)) {
            return null;
        }
        return new String(((VarCharVector) vector).get(i), StandardCharsets.UTF_8);
    }

    private static Instant timestamp(VectorSchemaRoot root, String column, int i) {
        FieldVector vector = root.getVector(column);
        if (vector == null || vector.isNull(i)) {
            return Instant.EPOCH;
        }
        return Timestamps.instant(((TimeStampMicroTZVector) vector).get(i));
    }

    private static Float floatOrNull(VectorSchemaRoot root, String column, int i) {
        FieldVector vector = root.getVector(column);
        return vector == null || vector.isNull(i) ? null : ((Float4Vector) vector).get(i);
    }

    @SuppressWarnings("unchecked")
    private static <T> List<T> list(VectorSchemaRoot root, String column, int i) {
        FieldVector vector = root.getVector(column);
        if (vector == null || vector.isNull(i)) {
            return List.of();
        }
        return new ArrayList<>((List<T>) ((ListVector) vector).getObject(i));
    }

    public static Map<String, String> metadataAt(VectorSchemaRoot root, int i) {
        FieldVector vector = root.getVector(METADATA);
        Map<String, String> map = new LinkedHashMap<>();
        if (vector == null || vector.isNull(i)) {
            return map;
        }
        ListVector list = (ListVector) vector;
        StructVector entries = (StructVector) list.getDataVector();
        VarCharVector keys = (VarCharVector) entries.getChild("key");
        VarCharVector vals = (VarCharVector) entries.getChild("value");
        int start = list.getElementStartIndex(i);
        int end = list.getElementEndIndex(i);
        for (int k = start; k < end; k++) {
            map.put(
                    new String(keys.get(k), StandardCharsets.UTF_8),
                    vals.isNull(k) ? null : new String(vals.get(k), StandardCharsets.UTF_8));
        }
        return map;
    }
}
