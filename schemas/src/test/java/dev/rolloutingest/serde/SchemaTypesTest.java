package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.values.RolloutValues;
import org.junit.jupiter.api.Test;

class SchemaTypesTest {
    @Test
    void avroSchemasInEachFormShowAsAvro() {
        assertThat(SchemaTypes.of(Rollout.getClassSchema().toString())).isEqualTo("AVRO");
        assertThat(SchemaTypes.of("\"string\"")).isEqualTo("AVRO");
        assertThat(SchemaTypes.of("[\"null\", \"string\"]")).isEqualTo("AVRO");
        assertThat(SchemaTypes.of("{\"type\": \"long\", \"logicalType\": \"timestamp-micros\"}"))
                .isEqualTo("AVRO");
        assertThat(SchemaTypes.of("{\"type\": \"array\", \"items\": \"int\"}")).isEqualTo("AVRO");
        assertThat(SchemaTypes.of("{\"type\": \"string\", \"avro.java.string\": \"String\", \"doc\": \"id\"}"))
                .isEqualTo("AVRO");
        assertThat(SchemaTypes.of("{\"type\": \"record\", \"name\": \"R\", \"title\": \"a custom property\", "
                        + "\"fields\": []}"))
                .as("an Avro type name wins over a property JSON Schema also uses")
                .isEqualTo("AVRO");
        assertThat(SchemaTypes.of("{\"type\": \"record\", \"fields\": ["))
                .as("not JSON: Avro's parser says why")
                .isEqualTo("AVRO");
    }

    @Test
    void jsonSchemasShowAsJson() {
        assertThat(SchemaTypes.of(RolloutValues.JSON_SCHEMA)).isEqualTo("JSON");
        assertThat(SchemaTypes.of("{\"type\": \"string\"}")).isEqualTo("JSON");
        assertThat(SchemaTypes.of("{\"type\": [\"string\", \"null\"]}")).isEqualTo("JSON");
        assertThat(SchemaTypes.of("{}")).isEqualTo("JSON");
        assertThat(SchemaTypes.of("true")).isEqualTo("JSON");
        assertThat(SchemaTypes.of("{\"type\": \"array\", \"items\": {\"type\": \"integer\"}}"))
                .isEqualTo("JSON");
    }

    @Test
    void protobufSchemasShowAsProtobuf() {
        assertThat(SchemaTypes.of(RolloutValues.PROTO)).isEqualTo("PROTOBUF");
        assertThat(SchemaTypes.of(RolloutValues.protoDescriptorBase64())).isEqualTo("PROTOBUF");
        assertThat(SchemaTypes.of("  message A { string a = 1; }")).isEqualTo("PROTOBUF");
    }
}
