package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeConfig;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class PipelineAppTest {
    private static Map<String, Object> settings(String applicationId, int port) {
        Map<String, Object> settings = new HashMap<>();
        settings.put("bootstrap.servers", "localhost:1");
        settings.put("schema.registry.url", "http://localhost:1");
        settings.put("rollout.table.uri", "/tmp/pipeline-app-test-table");
        settings.put("application.id", applicationId);
        settings.put("http.port", port);
        return settings;
    }

    @Test
    void appsOfOneProcessThatWouldCollideFailAtStartNamingTheKey() {
        assertThatThrownBy(() -> PipelineApp.start(
                        IngestConfig.of(settings("same", 8090)), MergeConfig.of(settings("same", 8091))))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("application.id");
        assertThatThrownBy(() -> PipelineApp.start(
                        IngestConfig.of(settings("ingest", 8095)), MergeConfig.of(settings("merge", 8095))))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("http.port");
    }
}
