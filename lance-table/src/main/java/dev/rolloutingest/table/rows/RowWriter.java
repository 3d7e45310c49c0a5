package dev.rolloutingest.table.rows;

import static dev.rolloutingest.table.rows.ContractFields.*;
import static dev.rolloutingest.table.rows.RolloutSchema.*;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.SerdeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
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

/**
 * Writes rows into one batch. The vectors are looked up once per batch, not once per row and column
 * (a by-name lookup per column was ~4 % of the ingest stream thread).
 *
 * <p>Three paths into the same vectors, kept together so a column's encoding is written once: {@link #write} for
 * {@code Rollout} objects, {@link #decode} straight from Avro bytes and {@link #columns} field by field from a decoder
 * that reads the contract off its own bytes (plain JSON), both the ingest hot path with no objects between; the
 * reader field positions they switch on ({@link ContractFields}) are checked against the contract when the class
 * loads. Over 300 lines because every path writes every column of the contract into the same vectors, and splitting
 * them would split each column's encoding in three.
 */
public final class RowWriter {
    /** A row decoded into a batch but not yet committed there: its key, its payload size and its offset. */
    public record Staged(String recordId, int payloadBytes, long sourceOffset) {}

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
    private final MapEntries entries = new MapEntries(); // reused for every metadata map of this batch
    private final ScannedRow scanned = new ScannedRow();

    /** Decodes a field beyond the contract (a producer's newer schema) into its row. */
    @FunctionalInterface
    public interface AddedFieldDecoder {
        void decode(int row, Decoder in, Schema.Field field) throws IOException;
    }

    public RowWriter(VectorSchemaRoot root) {
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
    public void write(int i, Rollout r, int partition, long offset, Instant ingested) {
        long created = Timestamps.micros(r.getCreatedAt());
        long ingestedMicros = Timestamps.micros(ingested);
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
    public Staged decode(
            int i, Decoder in, Schema.Field[] order, int partition, long offset, long ingested, AddedFieldDecoder added)
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
                    requireNoMarker(values, id);
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
        return new Staged(id, payloadBytes, offset);
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
    private Map<String, String> readMap(Decoder in) throws IOException {
        entries.clear();
        for (long n = in.readMapStart(); n != 0; n = in.mapNext()) {
            for (long j = 0; j < n; j++) {
                String key = in.readString();
                entries.put(key, in.readString());
            }
        }
        return entries.values();
    }

    /** Refuses metadata with the key that marks deletes, naming the record as far as it is known. */
    private static void requireNoMarker(Map<String, String> values, String id) {
        if (values.containsKey(Tombstones.MARKER)) {
            throw new SerdeException(
                    Tombstones.RESERVED_REASON,
                    "record " + id + " has the metadata key " + Tombstones.MARKER
                            + ", which marks deletes; a delete is a record with a null value",
                    null);
        }
    }

    /** A map's entries as they come, the last of a repeated key winning; one pair held without a map. */
    private static final class MapEntries {
        private String onlyKey;
        private String onlyValue;
        private Map<String, String> many;

        void clear() {
            onlyKey = null;
            onlyValue = null;
            many = null;
        }

        void put(String key, String value) {
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

        Map<String, String> values() {
            return many != null ? many : onlyKey == null ? Map.of() : Map.of(onlyKey, onlyValue);
        }
    }

    /**
     * Row {@code i}'s columns written field by field by a decoder that reads the contract off its own bytes, as
     * {@link #decode} writes them from Avro bytes; {@code finished} is told the row once it is complete. The one
     * instance of this writer is reused: a row is written at a time.
     */
    public FieldReader.Columns<Staged> columns(
            int i, int partition, long offset, long ingested, Consumer<Staged> finished) {
        scanned.start(i, partition, offset, ingested, finished);
        return scanned;
    }

    private final class ScannedRow implements FieldReader.Columns<Staged> {
        private int i;
        private int partition;
        private long offset;
        private long ingested;
        private Consumer<Staged> finished;
        private String id;
        private int payloadBytes;
        private String mapKey;

        void start(int i, int partition, long offset, long ingested, Consumer<Staged> finished) {
            this.i = i;
            this.partition = partition;
            this.offset = offset;
            this.ingested = ingested;
            this.finished = finished;
            id = null;
            payloadBytes = 0;
        }

        @Override
        public void string(int field, byte[] utf8, int from, int length) {
            VarCharVector vector =
                    switch (field) {
                        case F_RECORD_ID -> {
                            id = new String(utf8, from, length, StandardCharsets.UTF_8);
                            yield recordId;
                        }
                        case F_EXPERIMENT -> experiment;
                        case F_ROLLOUT_ID -> rolloutId;
                        case F_PROBLEM_ID -> problemId;
                        case F_ROLE -> role;
                        case F_CONTENT -> content;
                        default -> throw notA(field, "string");
                    };
            vector.setSafe(i, utf8, from, length);
        }

        @Override
        public void nullValue(int field) {
            switch (field) {
                case F_PROBLEM_ID -> problemId.setNull(i);
                case F_CONTENT -> content.setNull(i);
                case F_REWARD -> reward.setNull(i);
                case F_ADVANTAGE -> advantage.setNull(i);
                case F_POLICY_VERSION -> policyVersion.setNull(i);
                case F_BINARY_PAYLOAD -> payload.setNull(i);
                default -> throw notA(field, "nullable field");
            }
        }

        @Override
        public void intValue(int field, int value) {
            if (field != F_SEQUENCE_ORDER) {
                throw notA(field, "int");
            }
            sequenceOrder.setSafe(i, value);
        }

        @Override
        public void longValue(int field, long value) {
            switch (field) {
                case F_CREATED_AT -> createdAt.setSafe(i, value);
                case F_POLICY_VERSION -> policyVersion.setSafe(i, value);
                default -> throw notA(field, "long");
            }
        }

        @Override
        public void floatValue(int field, float value) {
            switch (field) {
                case F_REWARD -> reward.setSafe(i, value);
                case F_ADVANTAGE -> advantage.setSafe(i, value);
                default -> throw notA(field, "float");
            }
        }

        @Override
        public void booleanValue(int field, boolean value) {
            if (field != F_INCLUDE_IN_TRAINING) {
                throw notA(field, "boolean");
            }
            includeInTraining.setSafe(i, value ? 1 : 0);
        }

        @Override
        public void ints(int field, int[] values, int count) {
            ListVector list =
                    switch (field) {
                        case F_INPUT_TOKENS -> inputTokens;
                        case F_OUTPUT_TOKENS -> outputTokens;
                        default -> throw notA(field, "int array");
                    };
            int start = list.startNewValue(i);
            IntVector items = (IntVector) list.getDataVector();
            for (int k = 0; k < count; k++) {
                items.setSafe(start + k, values[k]);
            }
            list.endValue(i, count);
        }

        @Override
        public void floats(int field, float[] values, int count) {
            if (field != F_OUTPUT_LOGPROBS) {
                throw notA(field, "float array");
            }
            int start = outputLogprobs.startNewValue(i);
            Float4Vector items = (Float4Vector) outputLogprobs.getDataVector();
            for (int k = 0; k < count; k++) {
                items.setSafe(start + k, values[k]);
            }
            outputLogprobs.endValue(i, count);
        }

        @Override
        public void bytes(int field, byte[] value, int from, int length) {
            if (field != F_BINARY_PAYLOAD) {
                throw notA(field, "bytes");
            }
            payload.setSafe(i, value, from, length);
            payloadBytes = length;
        }

        @Override
        public void mapStart(int field, int count) {
            if (field != F_METADATA) {
                throw notA(field, "map");
            }
            entries.clear();
        }

        @Override
        public void mapKey(byte[] utf8, int from, int length) {
            mapKey = new String(utf8, from, length, StandardCharsets.UTF_8);
        }

        @Override
        public void mapValue(byte[] utf8, int from, int length) {
            entries.put(mapKey, new String(utf8, from, length, StandardCharsets.UTF_8));
        }

        @Override
        public void mapEnd() {
            Map<String, String> values = entries.values();
            requireNoMarker(values, id);
            metadata(i, values);
        }

        @Override
        public Staged finish() {
            sourcePartition.setSafe(i, partition);
            sourceOffset.setSafe(i, offset);
            ingestedAt.setSafe(i, ingested);
            Staged row = new Staged(id, payloadBytes, offset);
            finished.accept(row);
            return row;
        }

        private IllegalStateException notA(int field, String kind) {
            return new IllegalStateException("Reader field " + field + " is not a " + kind + " column");
        }
    }

    static {
        ContractFields.check(); // fails loading this class when the decoder's positions are wrong
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
}
