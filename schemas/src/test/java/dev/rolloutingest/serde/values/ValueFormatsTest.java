package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class ValueFormatsTest {
    @Test
    void theFirstMatchingOverrideWinsElseTheDefault() {
        ValueFormats formats = ValueFormats.of("avro", "actors-.*=json, actors-pb-.*=protobuf,team-b\\..*=JSON-SCHEMA");
        assertThat(formats.forTopic("actors-pb-1")).isEqualTo(ValueFormat.JSON); // the first match, not the best
        assertThat(formats.forTopic("team-b.rollouts")).isEqualTo(ValueFormat.JSON_SCHEMA);
        assertThat(formats.forTopic("xactors-1")).as("the whole name matches").isEqualTo(ValueFormat.AVRO);
        assertThat(ValueFormats.of("auto", "").forTopic("any")).isEqualTo(ValueFormat.AUTO);
    }

    @Test
    void badValuesFailNamingTheKey() {
        assertThatThrownBy(() -> ValueFormats.of("xml", ""))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(ValueFormats.FORMAT)
                .hasMessageContaining("avro, json, json-schema, protobuf, auto");
        assertThatThrownBy(() -> ValueFormats.of("auto", "a.*=json,b"))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(ValueFormats.FORMATS)
                .hasMessageContaining("'b' is not <topic-regex>=<format>");
        assertThatThrownBy(() -> ValueFormats.of("auto", "a(=json"))
                .hasMessageContaining(ValueFormats.FORMATS)
                .hasMessageContaining("not a regular expression");
        assertThatThrownBy(() -> ValueFormats.of("auto", "a=yaml"))
                .hasMessageContaining(ValueFormats.FORMATS)
                .hasMessageContaining("'yaml' is not one of");
    }
}
