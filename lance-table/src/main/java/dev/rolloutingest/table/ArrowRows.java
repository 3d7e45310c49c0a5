package dev.rolloutingest.table;

import static dev.rolloutingest.table.RolloutSchema.*;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.SerdeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
import org.apache.avro.Schema;
import org.apache.avro.io.Decoder;
import org.apache.avro.util.Utf8;

/** Converts rows to Arrow batches of {@link RolloutSchema#SCHEMA} and back. */
final class ArrowRows {
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
            micros(rollout.getCreatedAt());
        } catch (ArithmeticException e) {
            return "created_at " + rollout.getCreatedAt() + " is outside the microsecond range of the table";
        }
        return null;
    }

    /**
     * Writes rows into one batch. The vectors are looked up once per batch, not once per row and column
     * (a by-name lookup per column was ~4 % of the ingest stream thread).
     */
    static final class RowWriter {
        private final VarCharVector recordId;
        private final VarCharVector experiment;
        private final VarCharVector rolloutId;
        private final VarCharVector problemId;
        private final IntVector sequenceOrder;
        private final VarCharVector role;
        private final TimeStampMicroTZVector createdAt;
        private final VarCharVector content;
        private final ListVector inputTokens;
        private final ListVector outputTokens;
        private final ListVector outputLogprobs;
        private final Float4Vector reward;
        private final Float4Vector advantage;
        private final BigIntVector policyVersion;
        private final BitVector includeInTraining;
        private final ListVector metadata;
        private final LargeVarBinaryVector payload;
        private final IntVector sourcePartition;
        private final BigIntVector sourceOffset;
        private final TimeStampMicroTZVector ingestedAt;
        private final StructVector metadataEntries;
        private final VarCharVector metadataKeys;
        private final VarCharVector metadataValues;
        private Utf8 text; // reused for every string decoded into this batch
        private ByteBuffer bytes; // reused for every payload decoded into this batch

        /** Decodes a field beyond the contract (a producer's newer schema) into its row. */
        @FunctionalInterface
        interface AddedFieldDecoder {
            void decode(int row, Decoder in, Schema.Field field) throws IOException;
        }

        RowWriter(VectorSchemaRoot root) {
            recordId = (VarCharVector) root.getVector(RECORD_ID);
            experiment = (VarCharVector) root.getVector(EXPERIMENT);
            rolloutId = (VarCharVector) root.getVector(ROLLOUT_ID);
            problemId = (VarCharVector) root.getVector(PROBLEM_ID);
            sequenceOrder = (IntVector) root.getVector(SEQUENCE_ORDER);
            role = (VarCharVector) root.getVector(ROLE);
            createdAt = (TimeStampMicroTZVector) root.getVector(CREATED_AT);
            content = (VarCharVector) root.getVector(CONTENT);
            inputTokens = (ListVector) root.getVector(INPUT_TOKENS);
            outputTokens = (ListVector) root.getVector(OUTPUT_TOKENS);
            outputLogprobs = (ListVector) root.getVector(OUTPUT_LOGPROBS);
            reward = (Float4Vector) root.getVector(REWARD);
            advantage = (Float4Vector) root.getVector(ADVANTAGE);
            policyVersion = (BigIntVector) root.getVector(POLICY_VERSION);
            includeInTraining = (BitVector) root.getVector(INCLUDE_IN_TRAINING);
            metadata = (ListVector) root.getVector(METADATA);
            metadataEntries = (StructVector) metadata.getDataVector();
            metadataKeys = (VarCharVector) metadataEntries.getChild("key");
            metadataValues = (VarCharVector) metadataEntries.getChild("value");
            payload = (LargeVarBinaryVector) root.getVector(BINARY_PAYLOAD);
            sourcePartition = (IntVector) root.getVector(SOURCE_PARTITION);
            sourceOffset = (BigIntVector) root.getVector(SOURCE_OFFSET);
            ingestedAt = (TimeStampMicroTZVector) root.getVector(INGESTED_AT);
        }

        /**
         * Writes one row at index {@code i}. Fallible conversions happen before the first vector is touched,
         * so a refused row leaves the index free for the next one (Arrow setters overwrite an index in place).
         */
        void write(int i, Rollout r, int partition, long offset, Instant ingested) {
            long created = micros(r.getCreatedAt());
            long ingestedMicros = micros(ingested);
            utf8(recordId, i, r.getRecordId());
            utf8(experiment, i, r.getExperiment());
            utf8(rolloutId, i, r.getRolloutId());
            utf8(problemId, i, r.getProblemId());
            sequenceOrder.setSafe(i, r.getSequenceOrder());
            utf8(role, i, r.getRole());
            createdAt.setSafe(i, created);
            utf8(content, i, r.getContent());
            intList(inputTokens, i, r.getInputTokens());
            intList(outputTokens, i, r.getOutputTokens());
            floatList(outputLogprobs, i, r.getOutputLogprobs());
            float4(reward, i, r.getReward());
            float4(advantage, i, r.getAdvantage());
            if (r.getPolicyVersion() == null) {
                policyVersion.setNull(i);
            } else {
                policyVersion.setSafe(i, r.getPolicyVersion());
            }
            includeInTraining.setSafe(i, r.getIncludeInTraining() ? 1 : 0);
            metadata(i, r.getMetadata());
            if (r.getBinaryPayload() == null) {
                payload.setNull(i);
            } else {
                ByteBuffer buffer = r.getBinaryPayload().duplicate();
                payload.setSafe(i, buffer, buffer.position(), buffer.remaining());
            }
            sourcePartition.setSafe(i, partition);
            sourceOffset.setSafe(i, offset);
            ingestedAt.setSafe(i, ingestedMicros);
        }

        /**
         * Decodes one Avro-encoded rollout straight into row {@code i}: no Rollout, Strings (but the key),
         * boxed lists or maps on the way. {@code order} is the reader fields in the order their values come
         * (see {@code FieldReader}). Every column of the row is written, so a row that fails half-way is
         * overwritten whole by the next one.
         */
        GenerationBatch.Staged decode(
                int i,
                Decoder in,
                Schema.Field[] order,
                int partition,
                long offset,
                long ingested,
                AddedFieldDecoder added)
                throws IOException {
            String id = null;
            int payloadBytes = 0;
            for (Schema.Field field : order) {
                switch (field.pos()) {
                    case F_RECORD_ID -> {
                        text = in.readString(text);
                        recordId.setSafe(i, text.getBytes(), 0, text.getByteLength());
                        id = text.toString();
                    }
                    case F_EXPERIMENT -> string(in, experiment, i);
                    case F_ROLLOUT_ID -> string(in, rolloutId, i);
                    case F_PROBLEM_ID -> {
                        if (isNull(in)) {
                            problemId.setNull(i);
                        } else {
                            string(in, problemId, i);
                        }
                    }
                    case F_SEQUENCE_ORDER -> sequenceOrder.setSafe(i, in.readInt());
                    case F_ROLE -> string(in, role, i);
                    case F_CREATED_AT -> createdAt.setSafe(i, in.readLong());
                    case F_CONTENT -> {
                        if (isNull(in)) {
                            content.setNull(i);
                        } else {
                            string(in, content, i);
                        }
                    }
                    case F_INPUT_TOKENS -> intArray(in, inputTokens, i);
                    case F_OUTPUT_TOKENS -> intArray(in, outputTokens, i);
                    case F_OUTPUT_LOGPROBS -> floatArray(in, outputLogprobs, i);
                    case F_REWARD -> nullableFloat(in, reward, i);
                    case F_ADVANTAGE -> nullableFloat(in, advantage, i);
                    case F_POLICY_VERSION -> {
                        if (isNull(in)) {
                            policyVersion.setNull(i);
                        } else {
                            policyVersion.setSafe(i, in.readLong());
                        }
                    }
                    case F_INCLUDE_IN_TRAINING -> includeInTraining.setSafe(i, in.readBoolean() ? 1 : 0);
                    case F_METADATA -> {
                        Map<String, String> values = readMap(in);
                        if (values.containsKey(Tombstones.MARKER)) {
                            throw new SerdeException(
                                    Tombstones.RESERVED_REASON,
                                    "record " + id + " has the metadata key " + Tombstones.MARKER
                                            + ", which marks deletes; a delete is a record with a null value",
                                    null);
                        }
                        metadata(i, values);
                    }
                    case F_BINARY_PAYLOAD -> {
                        if (isNull(in)) {
                            payload.setNull(i);
                        } else {
                            bytes = in.readBytes(bytes);
                            payloadBytes = bytes.remaining();
                            payload.setSafe(i, bytes, bytes.position(), payloadBytes);
                        }
                    }
                    default -> {
                        if (field.pos() < CONTRACT_FIELDS) {
                            throw new IllegalStateException("No column for reader field " + field.name());
                        }
                        added.decode(i, in, field); // a field a producer added, beyond the contract
                    }
                }
            }
            sourcePartition.setSafe(i, partition);
            sourceOffset.setSafe(i, offset);
            ingestedAt.setSafe(i, ingested);
            return new GenerationBatch.Staged(id, payloadBytes, offset);
        }

        private void metadata(int i, Map<String, String> values) {
            int start = metadata.startNewValue(i);
            int k = 0;
            for (Map.Entry<String, String> e : (values.size() < 2 ? values : new TreeMap<>(values)).entrySet()) {
                metadataEntries.setIndexDefined(start + k);
                metadataKeys.setSafe(start + k, e.getKey().getBytes(StandardCharsets.UTF_8));
                if (e.getValue() == null) {
                    metadataValues.setNull(start + k);
                } else {
                    metadataValues.setSafe(start + k, e.getValue().getBytes(StandardCharsets.UTF_8));
                }
                k++;
            }
            metadata.endValue(i, k);
        }

        private void string(Decoder in, VarCharVector vector, int i) throws IOException {
            text = in.readString(text);
            vector.setSafe(i, text.getBytes(), 0, text.getByteLength());
        }
    }

    /** Reads a [null, T] union's branch: true for null (consumed), false when a T follows. */
    private static boolean isNull(Decoder in) throws IOException {
        if (in.readIndex() == 0) {
            in.readNull();
            return true;
        }
        return false;
    }

    private static void nullableFloat(Decoder in, Float4Vector vector, int i) throws IOException {
        if (isNull(in)) {
            vector.setNull(i);
        } else {
            vector.setSafe(i, in.readFloat());
        }
    }

    private static void intArray(Decoder in, ListVector list, int i) throws IOException {
        int start = list.startNewValue(i);
        IntVector items = (IntVector) list.getDataVector();
        int k = 0;
        for (long n = in.readArrayStart(); n != 0; n = in.arrayNext()) {
            for (long j = 0; j < n; j++) {
                items.setSafe(start + k++, in.readInt());
            }
        }
        list.endValue(i, k);
    }

    private static void floatArray(Decoder in, ListVector list, int i) throws IOException {
        int start = list.startNewValue(i);
        Float4Vector items = (Float4Vector) list.getDataVector();
        int k = 0;
        for (long n = in.readArrayStart(); n != 0; n = in.arrayNext()) {
            for (long j = 0; j < n; j++) {
                items.setSafe(start + k++, in.readFloat());
            }
        }
        list.endValue(i, k);
    }

    /** A map's entries, the last of a repeated key winning, as a Java map would hold them. */
    private static Map<String, String> readMap(Decoder in) throws IOException {
        String onlyKey = null;
        String onlyValue = null;
        Map<String, String> many = null;
        for (long n = in.readMapStart(); n != 0; n = in.mapNext()) {
            for (long j = 0; j < n; j++) {
                String key = in.readString();
                String value = in.readString();
                if (many == null && (onlyKey == null || onlyKey.equals(key))) {
                    onlyKey = key;
                    onlyValue = value;
                } else {
                    if (many == null) {
                        many = new TreeMap<>();
                        many.put(onlyKey, onlyValue);
                    }
                    many.put(key, value);
                }
            }
        }
        return many != null ? many : onlyKey == null ? Map.of() : Map.of(onlyKey, onlyValue);
    }

    // The Rollout reader schema's field positions, as the decoder's switch needs constants; checked below.
    private static final int F_RECORD_ID = 0;
    private static final int F_EXPERIMENT = 1;
    private static final int F_ROLLOUT_ID = 2;
    private static final int F_PROBLEM_ID = 3;
    private static final int F_SEQUENCE_ORDER = 4;
    private static final int F_ROLE = 5;
    private static final int F_CREATED_AT = 6;
    private static final int F_CONTENT = 7;
    private static final int F_INPUT_TOKENS = 8;
    private static final int F_OUTPUT_TOKENS = 9;
    private static final int F_OUTPUT_LOGPROBS = 10;
    private static final int F_REWARD = 11;
    private static final int F_ADVANTAGE = 12;
    private static final int F_POLICY_VERSION = 13;
    private static final int F_INCLUDE_IN_TRAINING = 14;
    private static final int F_METADATA = 15;
    private static final int F_BINARY_PAYLOAD = 16;
    /** Reader fields at this position and above are fields producers added (see AddedColumns). */
    static final int CONTRACT_FIELDS = 17;

    static {
        // A schema change that moves a field or a union's null branch must fail here, not decode wrong columns.
        Schema avro = Rollout.getClassSchema();
        String[] names = {
            RECORD_ID,
            EXPERIMENT,
            ROLLOUT_ID,
            PROBLEM_ID,
            SEQUENCE_ORDER,
            ROLE,
            CREATED_AT,
            CONTENT,
            INPUT_TOKENS,
            OUTPUT_TOKENS,
            OUTPUT_LOGPROBS,
            REWARD,
            ADVANTAGE,
            POLICY_VERSION,
            INCLUDE_IN_TRAINING,
            METADATA,
            BINARY_PAYLOAD
        };
        if (avro.getFields().size() != names.length || names.length != CONTRACT_FIELDS) {
            throw new ExceptionInInitializerError(
                    "Rollout has " + avro.getFields().size() + " fields, the decoder " + names.length);
        }
        for (int pos = 0; pos < names.length; pos++) {
            Schema.Field field = avro.getFields().get(pos);
            if (!field.name().equals(names[pos])) {
                throw new ExceptionInInitializerError(
                        "Rollout field " + pos + " is " + field.name() + ", the decoder" + " expects " + names[pos]);
            }
            Schema type = field.schema();
            if (type.getType() == Schema.Type.UNION
                    && (type.getTypes().size() != 2 || type.getTypes().get(0).getType() != Schema.Type.NULL)) {
                throw new ExceptionInInitializerError("Rollout field " + field.name() + " is not [null, T]");
            }
        }
    }

    private static void utf8(VarCharVector vector, int i, String value) {
        if (value == null) {
            vector.setNull(i);
        } else {
            vector.setSafe(i, value.getBytes(StandardCharsets.UTF_8));
        }
    }

    private static void float4(Float4Vector vector, int i, Float value) {
        if (value == null) {
            vector.setNull(i);
        } else {
            vector.setSafe(i, value);
        }
    }

    private static void intList(ListVector list, int i, List<Integer> values) {
        int start = list.startNewValue(i);
        IntVector items = (IntVector) list.getDataVector();
        for (int k = 0; k < values.size(); k++) {
            items.setSafe(start + k, values.get(k));
        }
        list.endValue(i, values.size());
    }

    private static void floatList(ListVector list, int i, List<Float> values) {
        int start = list.startNewValue(i);
        Float4Vector items = (Float4Vector) list.getDataVector();
        for (int k = 0; k < values.size(); k++) {
            items.setSafe(start + k, values.get(k));
        }
        list.endValue(i, values.size());
    }

    /**
     * Exact for every instant a timestamp-micros long can hold, Long.MIN_VALUE included: below zero the
     * seconds are taken one higher first, so the intermediate product cannot overflow before the sum fits.
     */
    static long micros(Instant instant) {
        long seconds = instant.getEpochSecond();
        long micros = instant.getNano() / 1_000;
        if (seconds < 0 && micros > 0) {
            return Math.addExact(Math.multiplyExact(seconds + 1, 1_000_000L), micros - 1_000_000L);
        }
        return Math.addExact(Math.multiplyExact(seconds, 1_000_000L), micros);
    }

    static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    /** Reads every row of a batch; columns missing from the batch (projection) come back as their defaults. */
    public static List<RolloutRow> fromRoot(VectorSchemaRoot root) {
        List<RolloutRow> rows = new ArrayList<>(root.getRowCount());
        for (int i = 0; i < root.getRowCount(); i++) {
            rows.add(read(root, i));
        }
        return rows;
    }

    static RolloutRow read(VectorSchemaRoot root, int i) {
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

    static String stringAt(VectorSchemaRoot root, String column, int i) {
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
        return instant(((TimeStampMicroTZVector) vector).get(i));
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

    static Map<String, String> metadataAt(VectorSchemaRoot root, int i) {
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
