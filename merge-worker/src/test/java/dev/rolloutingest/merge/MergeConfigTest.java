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
        MergeConfig env = MergeConfig.load(
                required(),
                Map.of(
                        "ROLLOUT_MERGE_MAX_GENERATIONS",
                        "0",
                        "ROLLOUT_MERGE_AFTER_GENERATIONS",
                        "0",
                        "TASK_COOLDOWN_AFTER_FAILURES",
                        "5"));
        assertThat(env.maxGenerations()).isZero();
        assertThat(env.afterGenerations()).isZero();
        assertThat(env.cooldownAfterFailures()).isEqualTo(5);
    }

    @Test
    void badValuesFailNamingTheKey() {
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_MAX_GENERATIONS", "-1")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.max.generations");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("TASK_COOLDOWN_MAX_SECS", "60")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("task.cooldown.max.secs");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_THREADS", "0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.threads");
    }

    @Test
    void mergeBudgetsOverHalfOfLanceMemoryPoolAreRefusedAtStartNamingKeyAndPool() {
        // A merge commit holds its source in lance-core's 100 MiB pool (no LANCE_MEM_POOL_SIZE here) and fails above
        // it.
        assertThat(MergeConfig.load(required(), Map.of()).maxBytes()).isLessThanOrEqualTo(50L << 20);
        assertThatThrownBy(() ->
                        MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_MAX_BYTES", String.valueOf(256L << 20))))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.max.bytes")
                .hasMessageContaining("LANCE_MEM_POOL_SIZE");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ROUND_MAX_BYTES", "0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.round.max.bytes");
        // a round is cut into merge-insert commits that fit the pool: its own budget may exceed it
        assertThat(MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ROUND_MAX_BYTES", String.valueOf(256L << 20)))
                        .roundMaxBytes())
                .isEqualTo(256L << 20);
    }

    @Test
    void theMergeJoinThresholdReachesTheTableSettingsAndANegativeOneFailsNamingTheKey() {
        assertThat(MergeConfig.load(required(), Map.of()).tableSettings().mergeScanJoinMaxBaseRows())
                .isEqualTo(2_000_000L);
        assertThat(MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_SCAN_JOIN_MAX_BASE_ROWS", "0"))
                        .tableSettings()
                        .mergeScanJoinMaxBaseRows())
                .isZero();
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_SCAN_JOIN_MAX_BASE_ROWS", "-1")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.scan.join.max.base.rows");
    }

    @Test
    void appendingNewKeysIsOnByDefaultCanBeTurnedOffAndABadValueFailsNamingTheKey() {
        assertThat(MergeConfig.load(required(), Map.of()).tableSettings().mergeAppendNewKeys())
                .isTrue();
        assertThat(MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_APPEND_NEW_KEYS", "false"))
                        .tableSettings()
                        .mergeAppendNewKeys())
                .isFalse();
        assertThat(MergeConfig.load(required(), Map.of()).tableSettings().mergeAdoptGenerations())
                .isTrue();
        assertThat(MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ADOPT_GENERATIONS", "false"))
                        .tableSettings()
                        .mergeAdoptGenerations())
                .isFalse();
        assertThat(MergeConfig.load(required(), Map.of()).tableSettings().mergeAdoptMinRows())
                .isEqualTo(1_000);
        assertThat(MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ADOPT_MIN_ROWS", "20000"))
                        .tableSettings()
                        .mergeAdoptMinRows())
                .isEqualTo(20_000);
        assertThat(MergeConfig.load(required(), Map.of()).tableSettings().mergeAdoptMaxBaseFragments())
                .isEqualTo(512);
        assertThat(MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ADOPT_MAX_BASE_FRAGMENTS", "64"))
                        .tableSettings()
                        .mergeAdoptMaxBaseFragments())
                .isEqualTo(64);
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ADOPT_MAX_BASE_FRAGMENTS", "-1")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.adopt.max.base.fragments");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_ADOPT_MIN_ROWS", "-1")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.adopt.min.rows");
        assertThatThrownBy(() -> MergeConfig.load(required(), Map.of("ROLLOUT_MERGE_APPEND_NEW_KEYS", "sometimes")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("rollout.merge.append.new.keys");
    }
}
