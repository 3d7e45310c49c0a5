package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.testsupport.Topics;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.StreamSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The README's Python producer examples (section "Producers: values and keys"), each ```python block parsed from
 * README.md and run as written with python3 against `./rollout-ingest demo --keep-running` (the script and packaged
 * jar, as a user runs it), with the two variables the demo prints set: each example's record is then readable by its
 * record_id through the demo's read API, and nothing went to the DLQ. Skipped where python3 with confluent-kafka or
 * protoc is absent ({@code scripts/install-test-tools} installs Debian's).
 */
class ReadmeProducerExamplesIT {
    private static final String SECTION = "## Producers: values and keys";
    private static final Pattern PYTHON_BLOCK = Pattern.compile("(?ms)^```python\\n(.*?)^```$");
    private static final Pattern RECORD_ID = Pattern.compile("record_id\"?\\s*[:=]\\s*\"([^\"]+)\"");
    private static final Pattern TOPIC = Pattern.compile("\\.produce\\(\\s*\"([^\"]+)\"");
    private static final Pattern EXPORT =
            Pattern.compile("(?m)^\\s*export (BOOTSTRAP_SERVERS|SCHEMA_REGISTRY_URL)=(\\S+)$");
    private static final Pattern READ_API = Pattern.compile("(?m)^demo: read API \\S+\\s+(http://\\S+)$");
    private static final String SERIALIZERS =
            "import confluent_kafka.schema_registry.json_schema, confluent_kafka.schema_registry.protobuf";
    private static final Path CONTRACTS = Path.of("..", "schemas", "src", "main", "resources", "contracts");

    @Test
    void everyPythonProducerExampleRunsAsWrittenAgainstTheDemoAndItsRecordLands() throws Exception {
        String python = python();
        assumeCommand(
                "protoc is not installed (scripts/install-test-tools installs Debian's protobuf-compiler)",
                "protoc",
                "--version");
        System.out.println("README examples run with " + python + ": "
                + run(
                                Path.of("."),
                                Map.of(),
                                30,
                                python,
                                "-c",
                                "import confluent_kafka as c; print('confluent-kafka',"
                                        + " c.version()[0], 'librdkafka', c.libversion()[0])")
                        .trim()
                + ", " + run(Path.of("."), Map.of(), 30, "protoc", "--version").trim());

        List<String> examples = pythonBlocks(Files.readString(Path.of("..", "README.md")));
        assertThat(examples)
                .as("```python blocks in the README's section %s", SECTION)
                .hasSizeGreaterThanOrEqualTo(3);
        String inputTopic = (String) IngestConfig.DEFINITION.defaultValues().get(IngestConfig.INPUT_TOPIC);
        Map<String, String> recordIds = new LinkedHashMap<>();
        for (String example : examples) {
            List<String> ids = RECORD_ID
                    .matcher(example)
                    .results()
                    .map(r -> r.group(1))
                    .distinct()
                    .toList();
            assertThat(ids).as("the record_id the example sends:%n%s", example).hasSize(1);
            assertThat(recordIds).as("record_ids of the examples, one each").doesNotContainKey(ids.get(0));
            assertThat(TOPIC.matcher(example).results().map(r -> r.group(1)).toList())
                    .as("the topic the example sends to, the demo's input topic:%n%s", example)
                    .containsOnly(inputTopic)
                    .isNotEmpty();
            recordIds.put(ids.get(0), example);
        }

        Path work = Path.of("target", "it-readme-producers").toAbsolutePath();
        Path log = work.resolve("demo.out");
        Files.createDirectories(work);
        Files.deleteIfExists(log);
        Process demo = startDemo(work, log);
        try {
            Map<String, String> env = awaitExports(demo, log);
            String readApi = matchIn(Files.readString(log), READ_API, log);
            Path dir = Files.createTempDirectory(work, "examples");
            Files.copy(CONTRACTS.resolve("rollout.schema.json"), dir.resolve("rollout.schema.json"));
            Files.copy(CONTRACTS.resolve("rollout.proto"), dir.resolve("rollout.proto"));
            run(dir, Map.of(), 60, "protoc", "--python_out=.", "rollout.proto"); // as the README says

            List<String> failures = new ArrayList<>();
            int n = 0;
            for (Map.Entry<String, String> example : recordIds.entrySet()) {
                Path script = dir.resolve("example" + ++n + ".py");
                Files.writeString(script, example.getValue());
                try {
                    run(dir, env, 90, python, script.getFileName().toString());
                } catch (AssertionError e) {
                    failures.add(example.getKey() + ": " + e.getMessage());
                }
            }
            assertThat(failures).as("README examples that failed (%s)", dir).isEmpty();

            HttpClient http = HttpClient.newHttpClient();
            for (String recordId : recordIds.keySet()) {
                String url = readApi + "/rollouts/" + URLEncoder.encode(recordId, StandardCharsets.UTF_8);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                HttpResponse<String> answer = get(http, url);
                while (answer.statusCode() != 200 && System.nanoTime() < deadline) {
                    Thread.sleep(500);
                    answer = get(http, url);
                }
                assertThat(answer.statusCode())
                        .as("GET %s (%s); dead letters: %s", url, answer.body(), deadLetters(env))
                        .isEqualTo(200);
                assertThat(answer.body()).contains("\"record_id\":\"" + recordId + "\"");
            }
            assertThat(deadLetters(env)).as("records in the DLQ").isEmpty();
        } finally {
            stop(demo);
        }
    }

    /** The ```python blocks of the README's producer section, as written. */
    static List<String> pythonBlocks(String readme) {
        int start = readme.indexOf("\n" + SECTION + "\n");
        assertThat(start).as("README section %s", SECTION).isNotNegative();
        int end = readme.indexOf("\n## ", start + SECTION.length() + 1);
        String section = readme.substring(start, end < 0 ? readme.length() : end);
        return PYTHON_BLOCK.matcher(section).results().map(m -> m.group(1)).toList();
    }

    /**
     * The python3 that imports confluent-kafka's serializers: the PATH's, else Debian's /usr/bin/python3 (where
     * python3-confluent-kafka installs, behind a pyenv or venv python3 on the PATH); else one that imports only
     * confluent_kafka (the examples then say what is missing); else the test is skipped.
     */
    private static String python() {
        List<String> candidates = List.of("python3", "/usr/bin/python3");
        for (String imports : List.of(SERIALIZERS, "import confluent_kafka")) {
            for (String python : candidates) {
                if (succeeds(python, "-c", imports)) {
                    return python;
                }
            }
        }
        Assumptions.abort("no python3 with the confluent_kafka module (scripts/install-test-tools installs Debian's"
                + " python3-confluent-kafka): README producer examples not run");
        return null;
    }

    private static void assumeCommand(String message, String... command) {
        Assumptions.assumeTrue(succeeds(command), message);
    }

    private static boolean succeeds(String... command) {
        try {
            Process p = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Runs a command in dir; returns its output, or fails with it (exit code or timeout). */
    private static String run(Path dir, Map<String, String> env, int seconds, String... command)
            throws IOException, InterruptedException {
        Path out = Files.createTempFile(Path.of("target"), "readme-example", ".out");
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(out.toFile());
        builder.environment().putAll(env);
        Process p = builder.start();
        boolean done = p.waitFor(seconds, TimeUnit.SECONDS);
        if (!done) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        String output = Files.readString(out);
        Files.delete(out);
        if (!done) {
            throw new AssertionError(
                    String.join(" ", command) + " did not finish within " + seconds + " s:\n" + output);
        }
        if (p.exitValue() != 0) {
            throw new AssertionError(String.join(" ", command) + " exited " + p.exitValue() + ":\n" + output);
        }
        return output;
    }

    private static Process startDemo(Path work, Path log) throws IOException {
        List<String> command = List.of(
                Path.of("..", "rollout-ingest").toAbsolutePath().toString(),
                "demo",
                "--records",
                "20",
                "--partitions",
                "2",
                "--payload-bytes",
                "16",
                "--data-dir",
                work.resolve("data").toString(),
                "--timeout",
                "240",
                "--keep-running");
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Path tmp = Files.createDirectories(work.resolve("tmp"));
        builder.environment().put("ROLLOUT_JAVA_OPTS", "-Xmx768m -Djava.io.tmpdir=" + tmp);
        return builder.start();
    }

    /** BOOTSTRAP_SERVERS and SCHEMA_REGISTRY_URL from the export lines the demo prints once it stays up. */
    private static Map<String, String> awaitExports(Process demo, Path log) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (true) {
            String output = Files.readString(log);
            Map<String, String> env = new LinkedHashMap<>();
            EXPORT.matcher(output).results().forEach(m -> env.put(m.group(1), m.group(2)));
            if (env.size() == 2) {
                return env;
            }
            assertThat(demo.isAlive())
                    .as("demo still running; output in %s:%n%s", log, output)
                    .isTrue();
            assertThat(System.nanoTime())
                    .as("demo printed its export lines within 300 s; output in %s", log)
                    .isLessThan(deadline);
            Thread.sleep(500);
        }
    }

    private static String matchIn(String output, Pattern pattern, Path log) {
        Matcher m = pattern.matcher(output);
        assertThat(m.find()).as("%s in the demo's output %s", pattern, log).isTrue();
        return m.group(1);
    }

    private static HttpResponse<String> get(HttpClient http, String url) throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(URI.create(url))
                        .timeout(Duration.ofSeconds(30))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Every record in the DLQ, as its reason and error headers. */
    private static List<String> deadLetters(Map<String, String> env) {
        String dlq = (String) IngestConfig.DEFINITION.defaultValues().get(IngestConfig.DLQ_TOPIC);
        List<ConsumerRecord<byte[], byte[]>> records = Topics.readToEnd(
                env.get("BOOTSTRAP_SERVERS"), dlq, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        return records.stream()
                .map(r -> StreamSupport.stream(r.headers().spliterator(), false)
                        .filter(h -> h.key().startsWith("rollout.dlq."))
                        .map(h -> h.key() + "=" + new String(h.value(), StandardCharsets.UTF_8))
                        .toList()
                        .toString())
                .toList();
    }

    /** SIGTERM, so the demo's shutdown hook stops the broker, the registry's child JVM and the apps. */
    private static void stop(Process demo) throws InterruptedException {
        demo.destroy();
        if (!demo.waitFor(60, TimeUnit.SECONDS)) {
            demo.destroyForcibly();
        }
    }
}
