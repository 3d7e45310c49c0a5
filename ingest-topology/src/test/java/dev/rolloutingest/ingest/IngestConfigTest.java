package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.serde.SerdeException;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class IngestConfigTest {
    private static Properties required() {
        Properties file = new Properties();
        file.put("bootstrap.servers", "b:9092");
        file.put("schema.registry.url", "http://r:8081");
        file.put("rollout.table.uri", "target/config-test/table");
        file.put("rollout.state.dir", "target/config-test/state");
        return file;
    }

    @Test
    void envVarsWinOverTheFileAndDefaultsFillTheRest() {
        Properties file = required();
        file.put("rollout.seal.max.rows", "100");
        IngestConfig config = IngestConfig.load(
                file, Map.of("ROLLOUT_SEAL_MAX_ROWS", "250", "ROLLOUT_TABLE_STORAGE_AWS_REGION", "eu-west-1"));
        assertThat(config.sealMaxRows()).isEqualTo(250);
        assertThat(config.sealMaxAgeMs()).isEqualTo(30_000);
        assertThat(config.maxInflightBlobBytes()).isEqualTo(512L << 20);
        assertThat(config.largeBlobLogBytes()).isEqualTo(16L << 20);
        assertThat(config.tableLocation().storageOptions()).containsEntry("aws_region", "eu-west-1");
        assertThat(config.streamsProperties())
                .containsEntry("processing.guarantee", "exactly_once_v2")
                .containsEntry("consumer.auto.offset.reset", "earliest");
    }

    @Test
    void streamThreadsDefaultToOnePerCoreAndTheStreamsKeyForThemIsRefusedNamingTheOneToSet() {
        assertThat(IngestConfig.load(required(), Map.of()).streamsProperties())
                .containsEntry("num.stream.threads", Runtime.getRuntime().availableProcessors());
        assertThat(IngestConfig.load(required(), Map.of("ROLLOUT_STREAM_THREADS", "3"))
                        .streamsProperties())
                .containsEntry("num.stream.threads", 3);
        Properties file = required();
        file.put("streams.num.stream.threads", "2");
        assertThatThrownBy(() -> IngestConfig.load(file, Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("streams.num.stream.threads")
                .hasMessageContaining("rollout.stream.threads");
    }

    @Test
    void aSealLargerThanOneMergeCommitCanHoldIsRefusedAtStart() {
        assertThat(IngestConfig.load(required(), Map.of()).sealMaxBytes()).isLessThanOrEqualTo(50L << 20);
        assertThatThrownBy(() ->
                        IngestConfig.load(required(), Map.of("ROLLOUT_SEAL_MAX_BYTES", String.valueOf(64L << 20))))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.seal.max.bytes")
                .hasMessageContaining("LANCE_MEM_POOL_SIZE");
    }

    @Test
    void securitySettingsFromTheFileOrStreamsEnvVarsReachStreamsAndEveryOtherClient() {
        Properties file = required();
        file.put("streams.security.protocol", "SASL_SSL");
        file.put("streams.ssl.truststore.location", "/etc/kafka/truststore.jks");
        IngestConfig config = IngestConfig.load(
                file,
                Map.of(
                        "STREAMS_SASL_MECHANISM",
                        "PLAIN",
                        "STREAMS_SASL_JAAS_CONFIG",
                        "org.apache.kafka.common.security.plain.PlainLoginModule required;"));
        Map<String, String> expected = Map.of(
                "security.protocol",
                "SASL_SSL",
                "sasl.mechanism",
                "PLAIN",
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required;",
                "ssl.truststore.location",
                "/etc/kafka/truststore.jks");
        assertThat(config.streamsProperties()).containsAllEntriesOf(expected);
        assertThat(config.clientConfig()).containsAllEntriesOf(expected).containsEntry("bootstrap.servers", "b:9092");
        assertThat(config.clientConfig()).containsAllEntriesOf(expected);
    }

    @Test
    void theInstanceIdIsKeptInTheStateDirectorySoARestartRejoinsAsTheSameStaticMember() {
        Properties file = required();
        file.put("rollout.state.dir", "target/config-test/state-" + java.util.UUID.randomUUID());
        String first =
                IngestConfig.load(file, Map.of()).streamsProperties().getProperty("main.consumer.group.instance.id");
        String again =
                IngestConfig.load(file, Map.of()).streamsProperties().getProperty("main.consumer.group.instance.id");
        assertThat(first).startsWith("rollout-ingest-").isEqualTo(again);
        file.put("rollout.state.dir", "target/config-test/state-" + java.util.UUID.randomUUID());
        assertThat(IngestConfig.load(file, Map.of()).streamsProperties().getProperty("main.consumer.group.instance.id"))
                .as("another state directory is another instance")
                .isNotEqualTo(first);
        assertThat(IngestConfig.load(file, Map.of("ROLLOUT_INSTANCE_ID", "pod-7"))
                        .streamsProperties()
                        .getProperty("main.consumer.group.instance.id"))
                .isEqualTo("rollout-ingest-pod-7");
    }

    @Test
    void aMissingRequiredKeyFailsNamingIt() {
        Properties file = required();
        file.remove("rollout.table.uri");
        assertThatThrownBy(() -> IngestConfig.load(file, Map.of()))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.table.uri");
    }

    @Test
    void aBadValueFailsNamingTheKey() {
        assertThatThrownBy(() -> IngestConfig.load(required(), Map.of("ROLLOUT_SEAL_MAX_ROWS", "0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.seal.max.rows");
        assertThatThrownBy(() -> IngestConfig.load(required(), Map.of("ROLLOUT_SEAL_MAX_AGE_MS", "soon")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.seal.max.age.ms");
        assertThatThrownBy(() -> IngestConfig.load(required(), Map.of("ROLLOUT_TABLE_URI", "gs://bucket/t")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.table.uri");
        assertThatThrownBy(() -> IngestConfig.load(required(), Map.of("ROLLOUT_TABLE_URI", "az://container/t")))
                .as("an Azure table whose account nothing names")
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.table.uri")
                .hasMessageContaining("azure_storage_account_name");
        assertThatThrownBy(() -> IngestConfig.load(required(), Map.of("SCHEMA_REGISTRY_URL", "registry:8081")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("schema.registry.url");
    }

    @Test
    void anUnreachableRegistryStopsTheAppAtStartWithAClearError() {
        Map<String, Object> values = new HashMap<>();
        required().forEach((k, v) -> values.put((String) k, v));
        values.put("schema.registry.url", "http://127.0.0.1:" + FreePorts.next());
        values.put("schema.registry.max.retries", 1);
        values.put("schema.registry.retry.backoff.ms", 10);
        assertThatThrownBy(() -> new IngestApp(IngestConfig.of(values)))
                .isInstanceOf(SerdeException.RegistryUnavailable.class)
                .hasMessageContaining("2 attempts")
                .hasMessageContaining("checking that the registry answers");
    }
}
