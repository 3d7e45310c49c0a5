package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.RecordKeys;
import dev.rolloutingest.serde.StubRegistry;
import dev.rolloutingest.serde.WireFormat;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Apicurio answers {@code GET /schemas/ids/{id}} without {@code schemaType} when a JSON Schema or Protobuf schema was
 * registered under a subject that held Avro: such values and keys are read as the type their schema's text shows.
 */
class UntypedRegistryAnswersTest {
    private final StubRegistry registry = new StubRegistry();

    @AfterEach
    void stop() {
        registry.close();
    }

    private ValueDeserializer auto() {
        ConfluentAvroDeserializer<Rollout> avro = new ConfluentAvroDeserializer<>(null, Rollout.class);
        avro.configure(Map.of("schema.registry.url", registry.url()), false);
        return new ValueDeserializer(
                ValueFormats.all(ValueFormat.AUTO),
                avro,
                registry.client(100),
                true,
                (id, f) -> {},
                (id, f) -> {},
                (id, f) -> {},
                100);
    }

    private static byte[] avro(Rollout rollout) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<>(Rollout.class).write(rollout, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    @Test
    void framedValuesWithoutSchemaTypeAreReadAsTheTypeTheirTextShows() throws Exception {
        registry.schema(1, null, Rollout.getClassSchema().toString())
                .schema(2, null, RolloutValues.JSON_SCHEMA)
                .schema(3, null, RolloutValues.PROTO)
                .schema(4, null, RolloutValues.protoDescriptorBase64());
        Rollout rollout = new RolloutGenerator("untyped", 32, 9).rollout(1, 0);
        byte[] avroBody = WireFormat.frame(1, avro(rollout));
        byte[] protobuf = RolloutValues.protobuf(rollout);
        ValueDeserializer values = auto();
        Map<String, Object> expected = Rows.avro(rollout);
        assertThat(values.deserializeFields("t", avroBody, Rows.READER)).isEqualTo(expected);
        assertThat(values.deserializeFields("t", RolloutValues.jsonSchemaFramed(2, rollout), Rows.READER))
                .as("JSON Schema")
                .isEqualTo(expected);
        assertThat(values.deserializeFields("t", RolloutValues.protobufFramed(3, protobuf), Rows.READER))
                .as(".proto text")
                .isEqualTo(expected);
        assertThat(values.deserializeFields("t", RolloutValues.protobufFramed(4, protobuf), Rows.READER))
                .as("a base64 FileDescriptorProto")
                .isEqualTo(expected);
    }

    @Test
    void framedKeysWithoutSchemaTypeAreReadAsTheTypeTheirTextShows() {
        registry.schema(5, null, "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"string\"}")
                .schema(6, null, "syntax = \"proto3\";\nmessage Key { string record_id = 1; }\n")
                .schema(7, null, "\"string\"");
        RecordKeys keys = new RecordKeys(registry.client(100), 100);
        assertThat(keys.recordId("t", WireFormat.frame(5, "\"k-5\"".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo("k-5");
        assertThat(keys.recordId("t", WireFormat.frame(6, new byte[] {0, 0x0a, 3, 'k', '-', '6'})))
                .isEqualTo("k-6");
        assertThat(keys.recordId("t", WireFormat.frame(7, new byte[] {6, 'k', '-', '7'})))
                .isEqualTo("k-7");
    }
}
