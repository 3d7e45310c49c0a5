package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Timestamp;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.SerdeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.junit.jupiter.api.Test;

/**
 * Protobuf values: both forms of a registered schema, the mapping to the contract checked against protobuf-java's
 * own encoder, presence, message indexes, each bad input and the added fields.
 */
class ProtobufValuesTest {
    private final List<List<String>> dropped = new ArrayList<>();

    private static final String TIMESTAMPED =
            """
            syntax = "proto3";
            package test.v1;
            import "google/protobuf/timestamp.proto";
            // a comment
            message Other { string x = 1; }
            message Step {
              string record_id = 1;
              string experiment = 2 [json_name = "exp"];
              string rollout_id = 3;
              string problem_id = 4;            /* no presence: absent is "" */
              sint64 sequence_order = 5;
              string role = 6;
              google.protobuf.Timestamp created_at = 7;
              repeated uint32 input_tokens = 9 [packed = false];
              repeated double output_logprobs = 11;
              optional double reward = 12;
              float advantage = 13;
              bool include_in_training = 15;
              map<string, string> metadata = 16;
              oneof extra { int32 steps = 20; string note = 21; }
              Env env = 22;
              repeated Kind kinds = 23;
              message Env { string name = 1; repeated int64 seeds = 2; }
              enum Kind { KIND_UNSET = 0; TOOL = 1; }
            }
            """;

    private Map<String, Object> read(FileDescriptor file, int[] indexes, byte[] message, boolean keep) {
        AddedFields added = new AddedFields(keep, (id, f) -> {}, (id, f) -> dropped.add(f), 100);
        ProtobufValues.Plan plan = ProtobufValues.plan(7, ProtoSchemas.message(7, file, indexes), added);
        AvroTape tape = new AvroTape();
        new ProtobufValues(added).read(plan, message, 0, message.length, tape);
        try {
            return Rows.READER.read(tape.decoder(), tape.order());
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    /** The contract's .proto, filled by protobuf-java (not by this project's encoder). */
    private static DynamicMessage contractMessage(Descriptor type, Rollout r) {
        DynamicMessage.Builder m = DynamicMessage.newBuilder(type);
        m.setField(type.findFieldByName("record_id"), r.getRecordId());
        m.setField(type.findFieldByName("experiment"), r.getExperiment());
        m.setField(type.findFieldByName("rollout_id"), r.getRolloutId());
        m.setField(type.findFieldByName("problem_id"), r.getProblemId());
        m.setField(type.findFieldByName("sequence_order"), r.getSequenceOrder());
        m.setField(type.findFieldByName("role"), r.getRole());
        m.setField(type.findFieldByName("created_at"), r.getCreatedAt().toEpochMilli());
        m.setField(type.findFieldByName("content"), r.getContent());
        r.getInputTokens().forEach(t -> m.addRepeatedField(type.findFieldByName("input_tokens"), t));
        r.getOutputTokens().forEach(t -> m.addRepeatedField(type.findFieldByName("output_tokens"), t));
        r.getOutputLogprobs().forEach(t -> m.addRepeatedField(type.findFieldByName("output_logprobs"), t));
        m.setField(type.findFieldByName("reward"), r.getReward());
        m.setField(type.findFieldByName("policy_version"), r.getPolicyVersion());
        m.setField(type.findFieldByName("include_in_training"), r.getIncludeInTraining());
        Descriptor entry = type.findFieldByName("metadata").getMessageType();
        r.getMetadata()
                .forEach((k, v) -> m.addRepeatedField(
                        type.findFieldByName("metadata"),
                        DynamicMessage.newBuilder(entry)
                                .setField(entry.findFieldByName("key"), k)
                                .setField(entry.findFieldByName("value"), v)
                                .build()));
        byte[] payload = new byte[r.getBinaryPayload().remaining()];
        r.getBinaryPayload().duplicate().get(payload);
        m.setField(type.findFieldByName("binary_payload"), ByteString.copyFrom(payload));
        return m.build();
    }

    @Test
    void bothFormsOfTheContractsSchemaReadARolloutAsAvroDoes() throws Exception {
        FileDescriptor fromText = ProtoSchemas.file(7, RolloutValues.PROTO);
        String base64 = Base64.getEncoder().encodeToString(fromText.toProto().toByteArray());
        FileDescriptor fromBase64 = ProtoSchemas.file(7, base64);
        assertThat(fromBase64.toProto()).isEqualTo(fromText.toProto());
        RolloutGenerator generator = new RolloutGenerator("proto", 40, 5);
        for (int i = 0; i < 20; i++) {
            Rollout rollout = generator.rollout(i, 0);
            Descriptor type = fromBase64.getMessageTypes().get(0);
            byte[] bytes = contractMessage(type, rollout).toByteArray();
            assertThat(bytes)
                    .as("the project's encoder writes what protobuf-java does")
                    .isEqualTo(RolloutValues.protobuf(rollout));
            assertThat(read(fromText, new int[0], bytes, true)).isEqualTo(Rows.avro(rollout));
        }
    }

    @Test
    void presenceDefaultsTimestampsMessageIndexesAndAddedFields() throws Exception {
        FileDescriptor file = ProtoSchemas.file(7, TIMESTAMPED);
        Descriptor step = file.getMessageTypes().get(1);
        Descriptor env = step.findNestedTypeByName("Env");
        DynamicMessage message = DynamicMessage.newBuilder(step)
                .setField(step.findFieldByName("record_id"), "r1")
                .setField(step.findFieldByName("experiment"), "e")
                .setField(step.findFieldByName("rollout_id"), "ro")
                .setField(step.findFieldByName("sequence_order"), -3L)
                .setField(step.findFieldByName("role"), "tool")
                .setField(
                        step.findFieldByName("created_at"),
                        Timestamp.newBuilder()
                                .setSeconds(1700000000L)
                                .setNanos(123456789)
                                .build())
                .addRepeatedField(step.findFieldByName("input_tokens"), 1_000_000_000)
                .addRepeatedField(step.findFieldByName("input_tokens"), 5)
                .addRepeatedField(step.findFieldByName("output_logprobs"), -0.25)
                .setField(step.findFieldByName("steps"), 9)
                .setField(
                        step.findFieldByName("env"),
                        DynamicMessage.newBuilder(env)
                                .setField(env.findFieldByName("name"), "maze")
                                .addRepeatedField(env.findFieldByName("seeds"), 1L)
                                .addRepeatedField(env.findFieldByName("seeds"), 2L)
                                .build())
                .addRepeatedField(
                        step.findFieldByName("kinds"),
                        step.getEnumTypes().get(0).findValueByNumber(1))
                .build();
        Map<String, Object> row = read(file, new int[] {1}, message.toByteArray(), true);
        assertThat(row)
                .containsEntry("problem_id", "") // no presence: Protobuf's default
                .containsEntry("sequence_order", -3)
                .containsEntry("created_at", 1700000000123456L)
                .containsEntry("input_tokens", List.of(1_000_000_000, 5))
                .containsEntry("output_tokens", List.of())
                .containsEntry("output_logprobs", List.of(-0.25f))
                .containsEntry("reward", null) // optional, unset
                .containsEntry("advantage", 0.0f) // no presence, unset: 0
                .containsEntry("include_in_training", false)
                .containsEntry("content", null) // not in the schema: the contract's default
                .containsEntry("policy_version", null)
                .containsEntry("steps", 9)
                .doesNotContainKey("note") // unset, has presence: null in the row
                .containsEntry("env", Map.of("name", "maze", "seeds", List.of(1L, 2L)))
                .containsEntry("kinds", List.of("TOOL"));
        assertThat(Rows.lastAdded).extracting(Schema.Field::name).containsExactly("steps", "env", "kinds");

        read(file, new int[] {1}, message.toByteArray(), false);
        assertThat(dropped).containsExactly(List.of("steps", "note", "env", "kinds"));
        assertThatThrownBy(() -> read(file, new int[] {2}, message.toByteArray(), true))
                .hasMessageContaining("message indexes [2] name no message");
    }

    @Test
    void badValuesAndSchemasNameTheirFault() {
        FileDescriptor contract = ProtoSchemas.file(7, RolloutValues.PROTO);
        byte[] good = RolloutValues.protobuf(new RolloutGenerator("bad", 30, 1).rollout(1, 0));
        assertFails(
                () -> read(contract, new int[0], Arrays.copyOf(good, good.length - 3), true),
                "not-protobuf",
                "truncated");
        byte[] unknownField = Arrays.copyOf(good, good.length + 3);
        unknownField[good.length] = (byte) 0x98; // field 99, wire type 0, as a varint tag
        unknownField[good.length + 1] = 0x06;
        unknownField[good.length + 2] = 1;
        assertFails(() -> read(contract, new int[0], unknownField, true), "not-protobuf", "field number 99");
        byte[] wrongWire = good.clone();
        wrongWire[0] = (byte) (1 << 3); // record_id as a varint
        assertFails(() -> read(contract, new int[0], wrongWire, true), "not-protobuf", "wire type");
        byte[] notUtf8 = {0x0a, 2, (byte) 0xC3, (byte) 0x28};
        assertFails(() -> read(contract, new int[0], notUtf8, true), "wrong-type", "record_id");
        assertFails(() -> read(contract, new int[0], new byte[] {0x0a, 1, 'r'}, true), "missing-field", "created_at");

        FileDescriptor wrongTypes =
                ProtoSchemas.file(8, RolloutValues.PROTO.replace("optional float reward", "optional string reward"));
        assertFails(() -> read(wrongTypes, new int[0], new byte[0], true), "wrong-type", "reward");
        FileDescriptor noExperiment = ProtoSchemas.file(9, RolloutValues.PROTO.replace("string experiment = 2;", ""));
        assertFails(
                () -> read(noExperiment, new int[0], new byte[] {0x0a, 1, 'r'}, true), "missing-field", "experiment");
        FileDescriptor longOrder =
                ProtoSchemas.file(10, RolloutValues.PROTO.replace("int32 sequence_order", "int64 sequence_order"));
        byte[] tooBig = {0x28, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x10}; // field 5 = 2^32
        assertFails(() -> read(longOrder, new int[0], tooBig, true), "wrong-type", "sequence_order");
        assertFails(
                () -> ProtoSchemas.file(11, "syntax = \"proto3\"; import \"other.proto\"; message A {}"),
                "schema-unreadable",
                "other.proto");
        assertFails(() -> ProtoSchemas.file(12, "bm90IGEgZGVzY3JpcHRvcg=="), "schema-unreadable", "12");
        assertFails(() -> ProtoSchemas.file(13, "message A { string a = ; }"), "schema-unreadable", "line 1");
    }

    private static void assertFails(
            org.assertj.core.api.ThrowableAssert.ThrowingCallable call, String reason, String mentions) {
        assertThatThrownBy(call)
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo(reason))
                .hasMessageContaining(mentions);
    }
}
