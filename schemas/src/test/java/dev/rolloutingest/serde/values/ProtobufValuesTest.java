package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Timestamp;
import com.google.protobuf.WireFormat;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.ProtoSchemas;
import dev.rolloutingest.serde.SerdeException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.junit.jupiter.api.Test;

/**
 * Protobuf values: both forms of a registered schema, the mapping to the contract checked against protobuf-java's
 * own encoder, presence, message indexes, each bad input and the added fields.
 */
class ProtobufValuesTest {
    private final List<List<String>> dropped = new ArrayList<>();
    private final List<List<String>> unknown = new ArrayList<>();

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
        return read(file, indexes, message, keep, Rows.READER);
    }

    private <R> R read(FileDescriptor file, int[] indexes, byte[] message, boolean keep, FieldReader<R> reader) {
        AddedFields added = new AddedFields(keep, (id, f) -> {}, (id, f) -> dropped.add(f), 100);
        ProtobufPlan plan = ProtobufPlan.of(7, ProtoSchemas.message(7, file, indexes), added);
        AvroTape tape = new AvroTape();
        new ProtobufValues(added, (id, numbers) -> unknown.add(numbers)).read(plan, message, 0, message.length, tape);
        try {
            return reader.read(tape.decoder(), tape.order());
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    /** Protobuf's encoding of what {@code write} writes, by protobuf-java's own writer. */
    private static byte[] wire(ProtoWriter write) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        write.to(out);
        out.flush();
        return bytes.toByteArray();
    }

    private interface ProtoWriter {
        void to(CodedOutputStream out) throws IOException;
    }

    /** The contract's required fields of the TIMESTAMPED message, as a start for hand-written messages. */
    private static void required(CodedOutputStream out) throws IOException {
        out.writeString(1, "r1");
        out.writeString(2, "e");
        out.writeString(3, "ro");
        out.writeSInt64(5, 1);
        out.writeString(6, "tool");
        out.writeMessage(7, Timestamp.newBuilder().setSeconds(1).build());
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
        assertFails(
                () -> read(contract, new int[0], concat(good, new byte[] {(byte) 0xfc, 0x01}), true),
                "not-protobuf",
                "end-group"); // field 31's end without its start
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

    @Test
    void fieldNumbersTheSchemaLacksAreSkippedAndCountedAsProtobufSkipsThem() throws Exception {
        FileDescriptor contract = ProtoSchemas.file(7, RolloutValues.PROTO);
        Rollout rollout = new RolloutGenerator("newer", 30, 1).rollout(1, 0);
        byte[] newer = wire(out -> {
            out.writeInt64(99, 5); // what a producer with a newer compiled class sends
            out.writeString(100, "newer");
            out.writeFixed64(101, 7);
            out.writeFixed32(102, 7);
            out.writeTag(103, WireFormat.WIRETYPE_START_GROUP);
            out.writeInt32(1, 3);
            out.writeTag(104, WireFormat.WIRETYPE_START_GROUP);
            out.writeString(2, "nested");
            out.writeTag(104, WireFormat.WIRETYPE_END_GROUP);
            out.writeTag(103, WireFormat.WIRETYPE_END_GROUP);
        });
        byte[] message = concat(newer, RolloutValues.protobuf(rollout), wire(out -> out.writeInt64(99, 6)));
        assertThat(read(contract, new int[0], message, true)).isEqualTo(Rows.avro(rollout));
        assertThat(unknown)
                .as("told once per record, each number once")
                .containsExactly(List.of("99", "100", "101", "102", "103"));
    }

    private static final String GROUPS =
            """
            syntax = "proto2";
            message Step {
              required string record_id = 1;
              required string experiment = 2;
              required string rollout_id = 3;
              required int32 sequence_order = 5;
              required string role = 6;
              required int64 created_at = 7;
              optional group Tool = 20 { optional string name = 1; repeated int32 args = 2; }
              repeated group Hit = 21 { optional int64 at = 1; }
            }
            """;

    @Test
    void groupsAreReadAsTheMessagesTheyAre() throws Exception {
        FileDescriptor file = ProtoSchemas.file(7, GROUPS);
        Descriptor step = file.getMessageTypes().get(0);
        Descriptor tool = step.findNestedTypeByName("Tool");
        Descriptor hit = step.findNestedTypeByName("Hit");
        DynamicMessage message = DynamicMessage.newBuilder(step)
                .setField(step.findFieldByName("record_id"), "r1")
                .setField(step.findFieldByName("experiment"), "e")
                .setField(step.findFieldByName("rollout_id"), "ro")
                .setField(step.findFieldByName("sequence_order"), 2)
                .setField(step.findFieldByName("role"), "tool")
                .setField(step.findFieldByName("created_at"), 1700000000123L)
                .setField(
                        step.findFieldByName("tool"),
                        DynamicMessage.newBuilder(tool)
                                .setField(tool.findFieldByName("name"), "grep")
                                .addRepeatedField(tool.findFieldByName("args"), 4)
                                .build())
                .addRepeatedField(
                        step.findFieldByName("hit"),
                        DynamicMessage.newBuilder(hit)
                                .setField(hit.findFieldByName("at"), 1L)
                                .build())
                .addRepeatedField(
                        step.findFieldByName("hit"),
                        DynamicMessage.newBuilder(hit)
                                .setField(hit.findFieldByName("at"), 2L)
                                .build())
                .build();
        Map<String, Object> row = read(file, new int[0], message.toByteArray(), true);
        assertThat(row)
                .containsEntry("created_at", 1700000000123000L)
                .containsEntry("tool", Map.of("name", "grep", "args", List.of(4)))
                .containsEntry("hit", List.of(Map.of("at", 1L), Map.of("at", 2L)));
    }

    @Test
    void textThatIsNotUtf8FailsTheRecordInAddedFieldsOfProto2Too() throws Exception {
        FileDescriptor file = ProtoSchemas.file(7, GROUPS);
        byte[] notUtf8 = {(byte) 0xC3, (byte) 0x28};
        byte[] required = wire(out -> {
            out.writeString(1, "r1");
            out.writeString(2, "e");
            out.writeString(3, "ro");
            out.writeInt32(5, 1);
            out.writeString(6, "user");
            out.writeInt64(7, 1L);
        });
        byte[] nested = concat(required, wire(out -> {
            out.writeTag(20, WireFormat.WIRETYPE_START_GROUP);
            out.writeByteArray(1, notUtf8);
            out.writeTag(20, WireFormat.WIRETYPE_END_GROUP);
        }));
        assertThatThrownBy(() -> read(file, new int[0], nested, true))
                .isInstanceOf(SerdeException.class)
                .hasMessageContaining("UTF-8");
    }

    private static final String ONEOF_CONTENT =
            """
            syntax = "proto3";
            message Step {
              string record_id = 1;
              string experiment = 2;
              string rollout_id = 3;
              int32 sequence_order = 5;
              string role = 6;
              int64 created_at = 7;
              oneof body { string content = 8; string summary = 30; }
            }
            """;

    @Test
    void ofAOneofsMembersTheLastOnTheWireWins() throws Exception {
        FileDescriptor file = ProtoSchemas.file(7, TIMESTAMPED);
        byte[] stepsThenNote = wire(out -> {
            required(out);
            out.writeInt32(20, 9);
            out.writeString(21, "n");
        });
        assertThat(read(file, new int[] {1}, stepsThenNote, true))
                .containsEntry("note", "n")
                .doesNotContainKey("steps");
        byte[] noteThenSteps = wire(out -> {
            required(out);
            out.writeString(21, "n");
            out.writeInt32(20, 9);
        });
        assertThat(read(file, new int[] {1}, noteThenSteps, true))
                .containsEntry("steps", 9)
                .doesNotContainKey("note");

        FileDescriptor contentInOneof = ProtoSchemas.file(8, ONEOF_CONTENT);
        byte[] base = wire(out -> {
            out.writeString(1, "r1");
            out.writeString(2, "e");
            out.writeString(3, "ro");
            out.writeString(6, "user");
            out.writeInt64(7, 1L);
        });
        assertThat(read(
                        contentInOneof,
                        new int[0],
                        concat(base, wire(out -> {
                            out.writeString(8, "c");
                            out.writeString(30, "s");
                        })),
                        true))
                .containsEntry("content", null)
                .containsEntry("summary", "s");
        assertThat(read(
                        contentInOneof,
                        new int[0],
                        concat(base, wire(out -> {
                            out.writeString(30, "s");
                            out.writeString(8, "c");
                        })),
                        true))
                .containsEntry("content", "c")
                .doesNotContainKey("summary");
    }

    @Test
    void aMessageFieldSeenTwiceIsMergedAsProtobufMergesIt() throws Exception {
        FileDescriptor file = ProtoSchemas.file(7, TIMESTAMPED);
        Descriptor step = file.getMessageTypes().get(1);
        Descriptor env = step.findNestedTypeByName("Env");
        byte[] twice = wire(out -> {
            out.writeString(1, "r1");
            out.writeString(2, "e");
            out.writeString(3, "ro");
            out.writeString(6, "tool");
            out.writeMessage(7, Timestamp.newBuilder().setSeconds(1700000000L).build());
            out.writeMessage(
                    22,
                    DynamicMessage.newBuilder(env)
                            .setField(env.findFieldByName("name"), "maze")
                            .addRepeatedField(env.findFieldByName("seeds"), 1L)
                            .build());
            out.writeMessage(7, Timestamp.newBuilder().setNanos(123456789).build());
            out.writeMessage(
                    22,
                    DynamicMessage.newBuilder(env)
                            .addRepeatedField(env.findFieldByName("seeds"), 2L)
                            .build());
        });
        DynamicMessage merged = DynamicMessage.parseFrom(step, twice);
        assertThat(merged.getField(step.findFieldByName("env")).toString())
                .as("protobuf-java's own reading")
                .contains("maze")
                .contains("seeds: 1")
                .contains("seeds: 2");
        assertThat(read(file, new int[] {1}, twice, true))
                .containsEntry("created_at", 1700000000123456L)
                .containsEntry("env", Map.of("name", "maze", "seeds", List.of(1L, 2L)));
    }

    @Test
    void aMapKeySeenTwiceKeepsItsLastValue() throws Exception {
        FileDescriptor contract = ProtoSchemas.file(7, RolloutValues.PROTO);
        Rollout rollout = new RolloutGenerator("maps", 30, 1).rollout(1, 0);
        rollout.setMetadata(Map.of());
        byte[] message = concat(RolloutValues.protobuf(rollout), wire(out -> {
            for (String[] entry : new String[][] {{"k", "a"}, {"j", "c"}, {"k", "b"}}) {
                out.writeTag(16, WireFormat.WIRETYPE_LENGTH_DELIMITED);
                out.writeUInt32NoTag(CodedOutputStream.computeStringSize(1, entry[0])
                        + CodedOutputStream.computeStringSize(2, entry[1]));
                out.writeString(1, entry[0]);
                out.writeString(2, entry[1]);
            }
        }));
        assertThat(read(contract, new int[0], message, true)).containsEntry("metadata", Map.of("k", "b", "j", "c"));
        FieldReader<Integer> metadataEntries = (in, order) -> {
            int entries = 0;
            for (Schema.Field field : order) {
                if (!field.name().equals("metadata")) {
                    new GenericDatumReader<>(field.schema()).read(null, in);
                    continue;
                }
                for (long n = in.readMapStart(); n != 0; n = in.mapNext()) {
                    for (long i = 0; i < n; i++) {
                        in.readString();
                        in.readString();
                        entries++;
                    }
                }
            }
            return entries;
        };
        assertThat(read(contract, new int[0], message, true, metadataEntries)).isEqualTo(2);
    }

    @Test
    void aMessageNameAvroCannotTakeStillNamesItsAddedRecord() throws Exception {
        // a package no protoc writes, in a base64 descriptor: protobuf-java builds it, Avro refuses the name
        String base64 = Base64.getEncoder()
                .encodeToString(ProtoSchemas.file(7, TIMESTAMPED).toProto().toBuilder()
                        .setPackage("9test\nv1")
                        .build()
                        .toByteArray());
        FileDescriptor file = ProtoSchemas.file(7, base64);
        Descriptor step = file.getMessageTypes().get(1);
        Descriptor env = step.findNestedTypeByName("Env");
        byte[] message = wire(out -> {
            required(out);
            out.writeMessage(
                    22,
                    DynamicMessage.newBuilder(env)
                            .setField(env.findFieldByName("name"), "maze")
                            .build());
        });
        assertThat(read(file, new int[] {1}, message, true))
                .containsEntry("env", Map.of("name", "maze", "seeds", List.of()));
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    private static void assertFails(
            org.assertj.core.api.ThrowableAssert.ThrowingCallable call, String reason, String mentions) {
        assertThatThrownBy(call)
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo(reason))
                .hasMessageContaining(mentions);
    }
}
