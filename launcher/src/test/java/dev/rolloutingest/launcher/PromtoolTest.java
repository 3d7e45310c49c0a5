package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.rolloutingest.embedded.PrometheusServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Prometheus config and alert rules of the compose deployment, checked by Prometheus' own {@code promtool}
 * (its config and rule checks, and its rule unit tests in {@code rules.test.yml}); skipped where promtool is
 * absent ({@code scripts/install-test-tools} installs it, as {@code .ci/run} does).
 */
class PromtoolTest {
    private static final Path PROMETHEUS_DIR =
            Path.of("..", "docker", "prometheus").toAbsolutePath().normalize();
    private static final Pattern ALERT = Pattern.compile("(?m)^\\s+- alert:\\s*(\\S+)");

    private static String promtool(String... args) throws Exception {
        Optional<Path> promtool = PrometheusServer.onPath("promtool");
        assumeTrue(
                promtool.isPresent(),
                "promtool is not installed: scripts/install-test-tools installs Debian's prometheus package");
        List<String> command = new ArrayList<>(List.of(promtool.get().toString()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command)
                .directory(PROMETHEUS_DIR.toFile())
                .redirectErrorStream(true)
                .start();
        String output = new String(process.getInputStream().readAllBytes());
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue())
                .as("promtool %s:%n%s", String.join(" ", args), output)
                .isZero();
        return output;
    }

    @Test
    void theComposeConfigPassesPromtool() throws Exception {
        assertThat(promtool("check", "config", "prometheus.yml")).contains("SUCCESS");
    }

    @Test
    void theAlertRulesPassPromtool() throws Exception {
        assertThat(promtool("check", "rules", "rules.yml")).contains("SUCCESS");
    }

    @Test
    void everyAlertRuleFiresAndStaysQuietOnItsUnitTestSeries() throws Exception {
        assertThat(promtool("test", "rules", "rules.test.yml")).contains("SUCCESS");
    }

    @Test
    void everyAlertHasAFiringAndAQuietCaseInTheUnitTestsAndLinksARunbookThatExists() throws Exception {
        String rules = Files.readString(PROMETHEUS_DIR.resolve("rules.yml"));
        String tests = Files.readString(PROMETHEUS_DIR.resolve("rules.test.yml"));
        Map<String, int[]> cases = new LinkedHashMap<>();
        Matcher alert = ALERT.matcher(rules);
        while (alert.find()) {
            cases.put(alert.group(1), new int[2]);
        }
        // the alerts an on-call engineer needs (issue: backlog, merge behind, lags, cooldown, stuck, DLQ, down)
        assertThat(cases.keySet())
                .contains(
                        "PendingGenerationsOverWarn",
                        "MergeFallingBehind",
                        "RolloutsNotReachingTheTable",
                        "MergeBacklogGrowing",
                        "MergeCooldownsActive",
                        "PartitionStuck",
                        "DeadLetters",
                        "AppNotRunning",
                        "AppDown");
        Matcher test = Pattern.compile("alertname:\\s*(\\S+)\\s*\\n\\s*exp_alerts:\\s*(\\[\\])?")
                .matcher(tests);
        while (test.find()) {
            int[] seen = cases.get(test.group(1));
            assertThat(seen)
                    .as("rules.test.yml tests %s, which rules.yml lacks", test.group(1))
                    .isNotNull();
            seen[test.group(2) == null ? 0 : 1]++;
        }
        cases.forEach((name, seen) -> {
            assertThat(seen[0]).as("%s: a case where it fires", name).isPositive();
            assertThat(seen[1]).as("%s: a case where it stays quiet", name).isPositive();
        });
        Matcher runbook = Pattern.compile("runbook:\\s*(\\S+)").matcher(rules);
        int runbooks = 0;
        while (runbook.find()) {
            runbooks++;
            assertThat(Path.of("..").resolve(runbook.group(1)))
                    .as(runbook.group(1))
                    .isRegularFile();
        }
        assertThat(runbooks).isEqualTo(cases.size());
    }
}
