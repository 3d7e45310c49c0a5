package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.AzuriteInstall;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/**
 * `./rollout-ingest demo` end to end exactly as a user runs it (the script, the packaged jar and its lib/
 * classpath), its summary checked against an independent read, its console free of WARN and ERROR lines.
 */
class DemoIT {
    private static final Pattern SUMMARY = Pattern.compile("summary: (.*)");
    private static final Pattern LOG_PROBLEM = Pattern.compile("(?m)^.*\\b(WARN|ERROR)\\b.*$");

    private static Map<String, String> runDemo(String name, String... extra) throws Exception {
        Path work = Path.of("target", "it-demo", name).toAbsolutePath();
        Path log = work.resolve("demo.out");
        Files.deleteIfExists(log);
        List<String> args = new java.util.ArrayList<>(List.of(
                "demo",
                "--records",
                "400",
                "--partitions",
                "3",
                "--payload-bytes",
                "200",
                "--data-dir",
                work.resolve("data").toString(),
                "--timeout",
                "240"));
        args.addAll(List.of(extra));
        List<String> command = new java.util.ArrayList<>(
                List.of(Path.of("..", "rollout-ingest").toAbsolutePath().toString()));
        command.addAll(args);
        Files.createDirectories(work);
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        // The demo's own temp dir: Kafka Streams rightly warns when state.dir lies under java.io.tmpdir, which
        // it would when the checkout itself sits in /tmp (a CI clone); it also keeps lance-core's native
        // library copies inside target/.
        Path tmp = Files.createDirectories(work.resolve("tmp"));
        builder.environment().put("ROLLOUT_JAVA_OPTS", "-Xmx768m -Djava.io.tmpdir=" + tmp);
        builder.environment().remove("LANCE_LOG"); // the script's own setting, as on a user's machine
        Process demo = builder.start();
        try {
            assertThat(demo.waitFor(300, java.util.concurrent.TimeUnit.SECONDS))
                    .as("demo finished; output in %s", log)
                    .isTrue();
        } finally {
            demo.destroyForcibly();
        }
        assertThat(demo.exitValue()).as("demo exit code; output in %s", log).isZero();
        String output = Files.readString(log);
        assertThat(output)
                .contains("demo: publishing 400 rollouts")
                .contains("readable")
                .containsPattern("Kafka bootstrap servers: localhost:\\d+")
                .containsPattern("schema registry \\(Confluent API\\): http://127\\.0\\.0\\.1:\\d+/apis/ccompat/v7");
        List<String> problems =
                LOG_PROBLEM.matcher(output).results().map(r -> r.group()).toList();
        assertThat(problems).as("WARN/ERROR lines in a healthy demo (%s)", log).isEmpty();
        Matcher m = SUMMARY.matcher(output);
        assertThat(m.find()).as("summary line in %s", log).isTrue();
        Map<String, String> summary = new HashMap<>();
        for (String pair : m.group(1).trim().split(" ")) {
            String[] kv = pair.split("=", 2);
            summary.put(kv[0], kv[1]);
        }
        return summary;
    }

    @Test
    void theDemoLandsMergesAndReadsEveryRecordAndAnIndependentReaderAgrees() throws Exception {
        Map<String, String> summary = runDemo("local");
        assertThat(summary)
                .containsEntry("produced", "400")
                .containsEntry("readable", "400")
                .containsEntry("sealed_rows", "400")
                .containsEntry("base_rows", "400")
                .containsEntry("pending", "0");
        assertThat(Long.parseLong(summary.get("generations")))
                .isPositive()
                .isEqualTo(Long.parseLong(summary.get("merged_generations")));
        try (RootAllocator allocator = new RootAllocator();
                Dataset table = Dataset.open(summary.get("table"), allocator)) {
            assertThat(table.countRows()).isEqualTo(400);
            assertThat(table.countRows("record_id = 'demo-399'")).isEqualTo(1);
            assertThat(table.countRows("record_id = 'demo-400'")).isZero();
        }
    }

    @Test
    void theDemoRunsWithTheTableOnTheEmbeddedS3Api() throws Exception {
        Map<String, String> summary = runDemo("s3", "--s3");
        assertThat(summary.get("table")).startsWith("s3://rollouts/");
        assertThat(summary)
                .containsEntry("readable", "400")
                .containsEntry("pending", "0")
                .containsEntry("base_rows", "400");
    }

    @Test
    void theDemoRunsWithTheTableOnAzuriteFromNpm() throws Exception {
        try {
            AzuriteInstall.blobMain(); // installed here, so the demo's own start measures only its run
        } catch (AzuriteInstall.Unavailable e) {
            Assumptions.abort("Azure demo skipped: " + e.getMessage());
        }
        Map<String, String> summary = runDemo("azure", "--azure");
        assertThat(summary.get("table")).startsWith("az://rollouts/");
        assertThat(summary)
                .containsEntry("readable", "400")
                .containsEntry("pending", "0")
                .containsEntry("base_rows", "400");
    }

    @Test
    void theDemoRoutesThreeExperimentsToThreeTablesWithOneFlag() throws Exception {
        Map<String, String> summary = runDemo("tables", "--tables", "3");
        assertThat(summary)
                .containsEntry("readable", "400")
                .containsEntry("pending", "0")
                .containsEntry("base_rows", "400");
        Path root = Path.of(summary.get("table"));
        long total = 0;
        try (RootAllocator allocator = new RootAllocator()) {
            for (int t = 0; t < 3; t++) {
                try (Dataset table = Dataset.open(root.resolve("demo-" + t).toString(), allocator)) {
                    long rows = table.countRows();
                    assertThat(rows).as("table demo-%d", t).isBetween(133L, 134L);
                    assertThat(table.countRows("experiment != 'demo-" + t + "'"))
                            .isZero();
                    total += rows;
                }
            }
        }
        assertThat(total).isEqualTo(400);
    }
}
