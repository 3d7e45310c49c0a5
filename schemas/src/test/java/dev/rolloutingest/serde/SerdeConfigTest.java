package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class SerdeConfigTest {
    @Test
    void missingRegistryUrlFailsNamingTheKey() {
        assertThatThrownBy(() -> SerdeConfig.from(Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema.registry.url");
    }

    @Test
    void nonHttpRegistryUrlFailsNamingTheKey() {
        assertThatThrownBy(() -> SerdeConfig.from(Map.of("schema.registry.url", "ftp://x")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema.registry.url");
    }

    @Test
    void badBooleanFailsNamingTheKey() {
        assertThatThrownBy(() -> SerdeConfig.from(
                        Map.of("schema.registry.url", "http://r:8081", "auto.register.schemas", "yes")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("auto.register.schemas");
    }

    @Test
    void otherSubjectStrategiesAreRejected() {
        assertThatThrownBy(() -> SerdeConfig.from(Map.of(
                        "schema.registry.url",
                        "http://r:8081",
                        "value.subject.name.strategy",
                        "io.confluent.kafka.serializers.subject.RecordNameStrategy")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("value.subject.name.strategy");
    }

    @Test
    void userInfoMustBeUserColonPassword() {
        assertThatThrownBy(() -> SerdeConfig.from(
                        Map.of("schema.registry.url", "http://r:8081", "basic.auth.user.info", "nocolon")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("basic.auth.user.info")
                .hasMessageNotContaining("nocolon");
    }

    @Test
    void confluentDefaultsApplyAndSeveralUrlsAreKept() {
        SerdeConfig config = SerdeConfig.from(Map.of("schema.registry.url", "http://a:1/, http://b:2"));
        assertThat(config.registryUrls()).extracting(Object::toString).containsExactly("http://a:1", "http://b:2");
        assertThat(config.autoRegisterSchemas()).isTrue();
        assertThat(config.useLatestVersion()).isFalse();
        assertThat(config.maxRetries()).isEqualTo(5);
    }
}
