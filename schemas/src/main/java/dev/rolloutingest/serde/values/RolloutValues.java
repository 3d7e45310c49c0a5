package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.core.JsonGenerator;
import com.google.protobuf.CodedOutputStream;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.ProtoSchemas;
import dev.rolloutingest.serde.WireFormat;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;

/**
 * A Rollout in the other formats, as producers write it: plain JSON (what {@code json.dumps} of a dict gives), and
 * the bodies of Confluent's JSON Schema and Protobuf framings, with the contract's schemas in those languages
 * ({@code contracts/rollout.schema.json}, {@code contracts/rollout.proto}, the README's too). For the benchmarks and
 * tests, and a producer in Java.
 */
public final class RolloutValues {
    /** The contract as a JSON Schema (draft-07). */
    public static final String JSON_SCHEMA = resource("contracts/rollout.schema.json");
    /** The contract as a .proto file (proto3, created_at as epoch milliseconds). */
    public static final String PROTO = resource("contracts/rollout.proto");

    private RolloutValues() {}

    /** {@link #PROTO} as Confluent's Python serializer registers a schema: a base64-encoded FileDescriptorProto. */
    public static String protoDescriptorBase64() {
        return protoDescriptorBase64(PROTO);
    }

    /** A {@code .proto} text as Confluent's Python serializer registers it: a base64-encoded FileDescriptorProto. */
    public static String protoDescriptorBase64(String protoText) {
        ProtoSchemas.file(0, protoText); // a text that does not build fails here
        return java.util.Base64.getEncoder()
                .encodeToString(
                        ProtoSchemas.descriptorOf("schema-0.proto", protoText).toByteArray());
    }

    /** Plain JSON: created_at as ISO-8601 (UTC, to the microsecond), binary_payload as base64. */
    public static byte[] json(Rollout r) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = JsonValues.factory().createGenerator(out)) {
            g.writeStartObject();
            g.writeStringField("record_id", r.getRecordId());
            g.writeStringField("experiment", r.getExperiment());
            g.writeStringField("rollout_id", r.getRolloutId());
            nullableString(g, "problem_id", r.getProblemId());
            g.writeNumberField("sequence_order", r.getSequenceOrder());
            g.writeStringField("role", r.getRole());
            g.writeStringField("created_at", r.getCreatedAt().toString());
            nullableString(g, "content", r.getContent());
            g.writeArrayFieldStart("input_tokens");
            for (int t : r.getInputTokens()) {
                g.writeNumber(t);
            }
            g.writeEndArray();
            g.writeArrayFieldStart("output_tokens");
            for (int t : r.getOutputTokens()) {
                g.writeNumber(t);
            }
            g.writeEndArray();
            g.writeArrayFieldStart("output_logprobs");
            for (float f : r.getOutputLogprobs()) {
                g.writeNumber(f);
            }
            g.writeEndArray();
            nullableFloat(g, "reward", r.getReward());
            nullableFloat(g, "advantage", r.getAdvantage());
            if (r.getPolicyVersion() == null) {
                g.writeNullField("policy_version");
            } else {
                g.writeNumberField("policy_version", r.getPolicyVersion());
            }
            g.writeBooleanField("include_in_training", r.getIncludeInTraining());
            g.writeObjectFieldStart("metadata");
            for (Map.Entry<String, String> e : r.getMetadata().entrySet()) {
                g.writeStringField(e.getKey(), e.getValue());
            }
            g.writeEndObject();
            if (r.getBinaryPayload() == null) {
                g.writeNullField("binary_payload");
            } else {
                g.writeFieldName("binary_payload");
                g.writeBinary(bytes(r.getBinaryPayload()));
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /** Confluent's JSON Schema framing of the JSON: magic byte, schema id, the JSON. */
    public static byte[] jsonSchemaFramed(int schemaId, Rollout r) {
        return WireFormat.frame(schemaId, json(r));
    }

    /** The message of {@link #PROTO}, unframed. */
    public static byte[] protobuf(Rollout r) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        try {
            out.writeString(1, r.getRecordId());
            out.writeString(2, r.getExperiment());
            out.writeString(3, r.getRolloutId());
            if (r.getProblemId() != null) {
                out.writeString(4, r.getProblemId());
            }
            if (r.getSequenceOrder() != 0) {
                out.writeInt32(5, r.getSequenceOrder());
            }
            out.writeString(6, r.getRole());
            Instant created = r.getCreatedAt();
            out.writeInt64(7, created.toEpochMilli());
            if (r.getContent() != null) {
                out.writeString(8, r.getContent());
            }
            packedInts(out, 9, r.getInputTokens());
            packedInts(out, 10, r.getOutputTokens());
            if (!r.getOutputLogprobs().isEmpty()) {
                out.writeTag(11, 2);
                out.writeUInt32NoTag(4 * r.getOutputLogprobs().size());
                for (float f : r.getOutputLogprobs()) {
                    out.writeFloatNoTag(f);
                }
            }
            if (r.getReward() != null) {
                out.writeFloat(12, r.getReward());
            }
            if (r.getAdvantage() != null) {
                out.writeFloat(13, r.getAdvantage());
            }
            if (r.getPolicyVersion() != null) {
                out.writeInt64(14, r.getPolicyVersion());
            }
            out.writeBool(15, r.getIncludeInTraining());
            for (Map.Entry<String, String> e : r.getMetadata().entrySet()) {
                byte[] key = e.getKey().getBytes(StandardCharsets.UTF_8);
                byte[] value = e.getValue().getBytes(StandardCharsets.UTF_8);
                out.writeTag(16, 2);
                out.writeUInt32NoTag(CodedOutputStream.computeByteArraySize(1, key)
                        + CodedOutputStream.computeByteArraySize(2, value));
                out.writeByteArray(1, key);
                out.writeByteArray(2, value);
            }
            if (r.getBinaryPayload() != null) {
                out.writeByteArray(17, bytes(r.getBinaryPayload()));
            }
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** Confluent's Protobuf framing of a schema's first message: magic byte, schema id, index [0] as one 0 byte. */
    public static byte[] protobufFramed(int schemaId, byte[] message) {
        byte[] body = new byte[message.length + 1];
        System.arraycopy(message, 0, body, 1, message.length);
        return WireFormat.frame(schemaId, body);
    }

    private static void packedInts(CodedOutputStream out, int field, java.util.List<Integer> values)
            throws IOException {
        if (values.isEmpty()) {
            return;
        }
        int size = 0;
        for (int v : values) {
            size += CodedOutputStream.computeInt32SizeNoTag(v);
        }
        out.writeTag(field, 2);
        out.writeUInt32NoTag(size);
        for (int v : values) {
            out.writeInt32NoTag(v);
        }
    }

    private static void nullableString(JsonGenerator g, String name, String value) throws IOException {
        if (value == null) {
            g.writeNullField(name);
        } else {
            g.writeStringField(name, value);
        }
    }

    private static void nullableFloat(JsonGenerator g, String name, Float value) throws IOException {
        if (value == null) {
            g.writeNullField(name);
        } else {
            g.writeNumberField(name, value);
        }
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
    }

    private static String resource(String name) {
        try (InputStream in = RolloutValues.class.getClassLoader().getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException(name + " is missing from the schemas jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
