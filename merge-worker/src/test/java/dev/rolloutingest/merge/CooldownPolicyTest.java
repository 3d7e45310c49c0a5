package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CooldownPolicyTest {
    private final CooldownPolicy policy = new CooldownPolicy(3, 600, 21_600, Duration.ofDays(1));

    private Cooldown fail(Cooldown previous, long now) {
        return policy.onFailure(previous, "merge", "shard-a", "boom", now);
    }

    @Test
    void belowTheThresholdAFailureOnlyCounts() {
        Cooldown once = fail(null, 1_000);
        Cooldown twice = fail(once, 2_000);
        assertThat(twice.failures()).isEqualTo(2);
        assertThat(twice.untilMs()).isZero();
        assertThat(policy.gates(twice, 2_001)).isFalse();
    }

    @Test
    void theThirdFailureCoolsDownForTheBaseThenDoublesUpToTheMax() {
        Cooldown c = fail(fail(fail(null, 0), 0), 10_000);
        assertThat(c.untilMs()).isEqualTo(10_000 + 600_000);
        assertThat(policy.gates(c, 10_000 + 599_999)).isTrue();
        assertThat(policy.gates(c, 10_000 + 600_000)).isFalse();
        c = fail(c, 20_000);
        assertThat(c.untilMs()).isEqualTo(20_000 + 1_200_000);
        for (int i = 0; i < 10; i++) {
            c = fail(c, 30_000);
        }
        assertThat(c.untilMs()).isEqualTo(30_000 + 21_600_000L);
        assertThat(c.lastError()).isEqualTo("boom");
    }

    @Test
    void zeroThresholdOrZeroBaseDisablesCooldowns() {
        CooldownPolicy never = new CooldownPolicy(0, 600, 21_600, Duration.ofDays(1));
        Cooldown c = null;
        for (int i = 0; i < 5; i++) {
            c = never.onFailure(c, "merge", "s", "e", 0);
        }
        assertThat(c.failures()).isEqualTo(5);
        assertThat(never.gates(c, 1)).isFalse();
        CooldownPolicy noBase = new CooldownPolicy(3, 0, 21_600, Duration.ofDays(1));
        Cooldown d = noBase.onFailure(
                noBase.onFailure(noBase.onFailure(null, "merge", "s", "e", 0), "merge", "s", "e", 0),
                "merge",
                "s",
                "e",
                0);
        assertThat(noBase.gates(d, 1)).isFalse();
    }

    @Test
    void recordsAgeOutOnlyWhenNotCoolingDown() {
        Cooldown c = fail(fail(fail(null, 0), 0), 0);
        long day = Duration.ofDays(1).toMillis();
        assertThat(policy.expired(c, 1_000)).isFalse();
        assertThat(policy.expired(c, day + 1)).isTrue();
        Cooldown below = fail(null, 0);
        assertThat(policy.expired(below, day)).isFalse();
        assertThat(policy.expired(below, day + 1)).isTrue();
    }
}
