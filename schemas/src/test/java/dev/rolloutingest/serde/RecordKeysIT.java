package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.ApicurioRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Keys as Confluent's serializers and Kafka Connect's converters frame them, registered in a real registry with
 * plain REST calls and framed by hand: every form that carries the record_id reads back as it.
 */
class RecordKeysIT {
    private static ApicurioRegistry registry;
    private static RecordKeys keys;

    @BeforeAll
    static void startRegistry() {
        registry = ApicurioRegistry.start(Path.of("target", "it-registry-keys"), Duration.ofSeconds(120));
        keys = new RecordKeys(
                new SchemaRegistryClient(SerdeConfig.from(Map.of("schema.registry.url", registry.confluentUrl()))),
                100);
    }

    @AfterAll
    static void stopRegistry() {
        registry.close();
    }

    private static int register(String subject, String type, String schema) {
        return registry.register(subject, type, schema);
    }

    private static byte[] avro(Schema schema, Object value) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<>(schema).write(value, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    @Test
    void everyKeyFormThatCarriesTheRecordIdReadsBackAsIt() throws Exception {
        assertThat(keys.recordId("t", "exp-7".getBytes(StandardCharsets.UTF_8))).isEqualTo("exp-7");
        assertThat(keys.recordId("t", null)).isNull();

        // KafkaAvroSerializer of a String key (Kafka Connect's AvroConverter with a string schema)
        Schema string = Schema.create(Schema.Type.STRING);
        int stringId = register("keys-avro-string-key", null, string.toString());
        assertThat(keys.recordId("t", WireFormat.frame(stringId, avro(string, "exp-8"))))
                .isEqualTo("exp-8");

        // an Avro record key with a record_id field
        Schema record = new Schema.Parser()
                .parse("{\"type\":\"record\",\"name\":\"RolloutKey\",\"fields\":[{\"name\":\"experiment\","
                        + "\"type\":\"string\"},{\"name\":\"record_id\",\"type\":\"string\"}]}");
        GenericRecord key = new GenericData.Record(record);
        key.put("experiment", "exp");
        key.put("record_id", "exp-9");
        int recordId = register("keys-avro-record-key", null, record.toString());
        assertThat(keys.recordId("t", WireFormat.frame(recordId, avro(record, key))))
                .isEqualTo("exp-9");

        // KafkaJsonSchemaSerializer: a string, and an object with record_id
        int jsonString = register(
                "keys-json-string-key",
                "JSON",
                "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"string\"}");
        assertThat(keys.recordId("t", WireFormat.frame(jsonString, "\"exp-10\"".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo("exp-10");
        int jsonObject = register(
                "keys-json-object-key",
                "JSON",
                "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\",\"properties\":{\"record_id\":{\"type\":\"string\"}}}");
        assertThat(keys.recordId(
                        "t",
                        WireFormat.frame(
                                jsonObject, "{\"record_id\":\"exp-11\",\"n\":1}".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo("exp-11");

        // KafkaProtobufSerializer: message index [0] as one 0 byte, then the message (field 1 varint, field 2 string)
        int proto = register(
                "keys-proto-key",
                "PROTOBUF",
                "syntax = \"proto3\";\npackage rollouts;\nmessage RolloutKey {\n  int64 step = 1;\n"
                        + "  string record_id = 2;\n}\n");
        byte[] id = "exp-12".getBytes(StandardCharsets.UTF_8);
        byte[] message = concat(new byte[] {0x08, 0x05, 0x12, (byte) id.length}, id);
        assertThat(keys.recordId("t", WireFormat.frame(proto, concat(new byte[] {0}, message))))
                .isEqualTo("exp-12");
    }

    @Test
    void keysThatCannotCarryARecordIdFailAsTheRecordsFault() throws Exception {
        Schema integer = Schema.create(Schema.Type.INT);
        int intId = register("keys-avro-int-key", null, integer.toString());
        assertThatThrownBy(() -> keys.recordId("t", WireFormat.frame(intId, avro(integer, 5))))
                .isInstanceOfSatisfying(SerdeException.class, e -> {
                    assertThat(e.recordsFault()).isTrue();
                    assertThat(e.reason()).isEqualTo("key-unreadable");
                })
                .hasMessageContaining("neither a string nor a record");
        assertThatThrownBy(() -> keys.recordId("t", WireFormat.frame(987_654, new byte[] {2, 65})))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("unknown-schema-id"));
        assertThatThrownBy(() -> keys.recordId("t", new byte[] {(byte) 0xff, (byte) 0xfe, 1}))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("key-unreadable"));
    }
}
