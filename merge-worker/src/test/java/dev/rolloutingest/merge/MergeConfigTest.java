package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class MergeConfigTest {
    private static Properties required() {
        Properties file = new Properties();
        file.put("bootstrap.servers", "b:9092");
        file.put("schema.registry.url", "http://r:8081");
        file.put("rollout.table.uri", "target/config-test/table");
        return file;
    }

    @Test
    void theDesignDefaultsHoldAndEnvVarsOverrideThem() {
        MergeConfig defaults = MergeConfig.load(required(), Map.of());
        assertThat(defaults.maxGenerations()).isEqualTo(8);
        assertThat(defaults.cooldownAfterFailures()).isEqualTo(3);
        assertThat(defaults.cooldownBaseSecs()).isEqualTo(600);
        assertThat(defaults.cooldownMaxSecs()).isEqualTo(21_600);
        MergeConfig env = MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_MAX_GENERATIONS", "0",
                "ROLLOUT_MERGE_AFTER_GENERATIONS", "0", "TASK_COOLDOWN_AFTER_FAILURES", "5"));
        assertThat(env.maxGenerations()).isZero();
        assertThat(env.afterGenerations()).isZero();
        assertThat(env.cooldownAfterFailures()).isEqualTo(5);
    }

    @Test
    void badValuesFailNamingTheKey() {
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_MAX_GENERATIONS", "-1")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("rollout.merge.max.generations");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("TASK_COOLDOWN_MAX_SECS", "60")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("task.cooldown.max.secs");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_THREADS", "0")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("rollout.merge.threads");
    }
}
