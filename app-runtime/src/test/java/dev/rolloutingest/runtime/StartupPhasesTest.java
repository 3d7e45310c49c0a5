package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StartupPhasesTest {
    @Test
    void theFirstRunningNamesEveryPhaseWithItsTimeAndLaterOnesSayNothing() throws Exception {
        StartupPhases startup = new StartupPhases("rollout-test");
        Thread.sleep(20);
        startup.mark("tables opened");
        startup.mark("Kafka Streams and HTTP built");

        String line = startup.running();
        assertThat(line)
                .startsWith("rollout-test: RUNNING ")
                .containsPattern("JVM and classes until the app began \\d+ ms, tables opened (\\d{2,}) ms,"
                        + " Kafka Streams and HTTP built \\d+ ms, Streams joining the group and restoring its stores"
                        + " until RUNNING \\d+ ms");
        assertThat(startup.running())
                .as("a later RUNNING (after a rebalance) is not a start")
                .isNull();
    }
}
