package dev.rolloutingest.table.rows;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.AvroContracts;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.generations.GenerationBatch;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.RootAllocator;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.ResolvingDecoder;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.junit.jupiter.api.Test;

/**
 * Avro bytes decoded straight into a batch's columns hold exactly what decoding into Rollout objects and
 * appending them holds: for the writer's own schema, for an older and a newer writer schema (resolution), and a
 * row that fails half-way leaves no trace.
 */
class AvroRowDecodeTest {
    static {
        AvroContracts.trust();
    }

    private static final Schema READER = Rollout.getClassSchema();
    private static final Schema.Field[] READER_ORDER = READER.getFields().toArray(new Schema.Field[0]);
    private static final Instant INGESTED = Instant.parse("2026-12-01T00:00:00.123456Z");

    private static List<Rollout> variedRollouts() {
        RolloutGenerator generator = new RolloutGenerator("exp", 40, 11);
        List<Rollout> rollouts = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            rollouts.add(generator.rollout(i, i));
        }
        Rollout nulls = rollouts.get(1);
        nulls.setProblemId(null);
        nulls.setContent(null);
        nulls.setReward(null);
        nulls.setPolicyVersion(null);
        nulls.setBinaryPayload(null);
        nulls.setInputTokens(List.of());
        nulls.setMetadata(Map.of());
        Rollout many = rollouts.get(2);
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put("zeta", "last");
        metadata.put("alpha", "first");
        metadata.put("mid", "ü-ñ");
        many.setMetadata(metadata);
        many.setContent("unicode ✓ and a long text ".repeat(50));
        many.setIncludeInTraining(false);
        many.setAdvantage(-0.5f);
        return rollouts;
    }

    private static byte[] encode(Rollout rollout) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<>(Rollout.class).write(rollout, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    private static byte[] encode(GenericRecord record) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(record.getSchema()).write(record, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    /** The rows of a batch filled through the object path, and of one filled by decoding the same bytes. */
    private static void assertSameRows(List<byte[]> encoded, Schema writer) throws IOException {
        try (RootAllocator allocator = new RootAllocator();
                GenerationBatch viaObjects = GenerationBatch.create(allocator);
                GenerationBatch decoded = GenerationBatch.create(allocator)) {
            SpecificDatumReader<Rollout> objects = new SpecificDatumReader<>(writer, READER);
            ResolvingDecoder resolving =
                    writer.equals(READER) ? null : DecoderFactory.get().resolvingDecoder(writer, READER, null);
            for (int i = 0; i < encoded.size(); i++) {
                byte[] bytes = encoded.get(i);
                Rollout object = objects.read(null, DecoderFactory.get().binaryDecoder(bytes, null));
                viaObjects.append(object, 3, i, INGESTED);
                BinaryDecoder in = DecoderFactory.get().binaryDecoder(bytes, null);
                RowWriter.Staged staged;
                if (resolving == null) {
                    staged = decoded.stage(in, READER_ORDER, 3, i, INGESTED);
                } else {
                    resolving.configure(in);
                    staged = decoded.stage(resolving, resolving.readFieldOrder(), 3, i, INGESTED);
                    resolving.drain();
                }
                assertThat(in.isEnd()).as("every byte of record %d read", i).isTrue();
                decoded.commitStaged();
                assertThat(staged.recordId()).isEqualTo(object.getRecordId());
            }
            assertThat(ArrowRows.fromRoot(decoded.sealedRoot()))
                    .isEqualTo(ArrowRows.fromRoot(viaObjects.sealedRoot()))
                    .hasSize(encoded.size());
        }
    }

    @Test
    void decodingTheWritersOwnSchemaGivesTheRowsTheObjectPathGives() throws Exception {
        List<byte[]> encoded = new ArrayList<>();
        for (Rollout rollout : variedRollouts()) {
            encoded.add(encode(rollout));
        }
        assertSameRows(encoded, READER);
    }

    @Test
    void anOlderWriterSchemaIsResolvedWithTheReadersDefaults() throws Exception {
        // An older producer: no metadata, no binary_payload, no advantage; the fields it has in another order.
        Schema older = new Schema.Parser()
                .parse(
                        """
                {"type": "record", "name": "Rollout", "namespace": "dev.rolloutingest.schemas", "fields": [
                  {"name": "experiment", "type": "string"},
                  {"name": "record_id", "type": "string"},
                  {"name": "rollout_id", "type": "string"},
                  {"name": "problem_id", "type": ["null", "string"], "default": null},
                  {"name": "sequence_order", "type": "int"},
                  {"name": "role", "type": "string"},
                  {"name": "created_at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
                  {"name": "content", "type": ["null", "string"], "default": null},
                  {"name": "input_tokens", "type": {"type": "array", "items": "int"}, "default": []},
                  {"name": "output_tokens", "type": {"type": "array", "items": "int"}, "default": []},
                  {"name": "output_logprobs", "type": {"type": "array", "items": "int"}, "default": []},
                  {"name": "reward", "type": ["null", "float"], "default": null},
                  {"name": "policy_version", "type": ["null", "int"], "default": null},
                  {"name": "include_in_training", "type": "boolean", "default": true},
                  {"name": "extra_from_the_future", "type": "string", "default": ""}
                ]}""");
        List<byte[]> encoded = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            GenericRecord record = new GenericData.Record(older);
            record.put("experiment", "exp");
            record.put("record_id", "old-" + i);
            record.put("rollout_id", "r-" + i);
            record.put("problem_id", i % 2 == 0 ? null : "p" + i);
            record.put("sequence_order", i);
            record.put("role", "user");
            record.put("created_at", 1_760_000_000_000_000L + i);
            record.put("content", "text " + i);
            record.put("input_tokens", List.of(1, 2, i));
            record.put("output_tokens", List.of());
            record.put("output_logprobs", List.of(-1, i)); // int items promoted to float
            record.put("reward", i % 2 == 0 ? 0.25f : null);
            record.put("policy_version", i); // int promoted to long
            record.put("include_in_training", i != 2);
            record.put("extra_from_the_future", "skipped");
            encoded.add(encode(record));
        }
        assertSameRows(encoded, older);
    }

    @Test
    void aRecordThatFailsHalfWayLeavesTheBatchAsItWasAndTheNextRowWhole() throws Exception {
        List<Rollout> rollouts = variedRollouts();
        byte[] whole = encode(rollouts.get(2));
        byte[] truncated = Arrays.copyOf(whole, whole.length / 2);
        try (RootAllocator allocator = new RootAllocator();
                GenerationBatch batch = GenerationBatch.create(allocator)) {
            batch.stage(
                    DecoderFactory.get().binaryDecoder(encode(rollouts.get(0)), null), READER_ORDER, 0, 1, INGESTED);
            batch.commitStaged();
            assertThatThrownBy(() -> batch.stage(
                            DecoderFactory.get().binaryDecoder(truncated, null), READER_ORDER, 0, 2, INGESTED))
                    .isInstanceOf(IOException.class);
            assertThat(batch.size()).isEqualTo(1);
            assertThatThrownBy(batch::commitStaged).isInstanceOf(IllegalStateException.class);
            batch.stage(
                    DecoderFactory.get().binaryDecoder(encode(rollouts.get(1)), null), READER_ORDER, 0, 3, INGESTED);
            batch.commitStaged();
            List<RolloutRow> rows = ArrowRows.fromRoot(batch.sealedRoot());
            assertThat(rows).extracting(RolloutRow::sourceOffset).containsExactly(1L, 3L);
            assertThat(rows.get(1).rollout().getRecordId())
                    .isEqualTo(rollouts.get(1).getRecordId());
            assertThat(rows.get(1).rollout().getContent()).isNull();
            assertThat(rows.get(1).rollout().getInputTokens()).isEmpty();
            assertThat(rows.get(1).rollout().getMetadata()).isEmpty();
            assertThat(rows.get(1).rollout().getBinaryPayload()).isNull();
            assertThat(batch.experimentAt(1)).isEqualTo("exp");
        }
    }

    @Test
    void aPayloadIsCopiedWhole() throws Exception {
        Rollout rollout = variedRollouts().get(0);
        byte[] payload = new byte[70_000];
        for (int i = 0; i < payload.length; i++) {
            payload[i] = (byte) (i * 31);
        }
        rollout.setBinaryPayload(ByteBuffer.wrap(payload));
        try (RootAllocator allocator = new RootAllocator();
                GenerationBatch batch = GenerationBatch.create(allocator)) {
            RowWriter.Staged staged = batch.stage(
                    DecoderFactory.get().binaryDecoder(encode(rollout), null), READER_ORDER, 0, 0, INGESTED);
            batch.commitStaged();
            assertThat(staged.payloadBytes()).isEqualTo(payload.length);
            ByteBuffer stored =
                    ArrowRows.fromRoot(batch.sealedRoot()).get(0).rollout().getBinaryPayload();
            byte[] back = new byte[stored.remaining()];
            stored.get(back);
            assertThat(back).isEqualTo(payload);
        }
    }
}
