package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.ConfigSources;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * A cluster whose only client listener is SASL/PLAIN: the security settings given once (streams.* in the
 * properties file, --client-setting on the CLI) reach every Kafka client the project creates. Ingest (Streams,
 * sealed-lag publisher), merge (Streams, start-up admin, merged-lag publisher), status and replay all work;
 * a client without the settings is shown not to.
 */
class SecuredClusterIT {
    private static final String USER = "rollout";
    private static final String PASSWORD = "rollout-secret";

    @Test
    void ingestMergeStatusAndReplayWorkThroughASaslPlainListener() throws Exception {
        Path root = Path.of("target", "it-sasl", UUID.randomUUID().toString()).toAbsolutePath();
        try (EmbeddedKafka kafka = EmbeddedKafka.startWithSaslPlain(root.resolve("kafka"), USER, PASSWORD);
                ApicurioRegistry registry = ApicurioRegistry.start(root.resolve("registry"), Duration.ofSeconds(120))) {
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", 2, (short) 1),
                    new NewTopic("rollout-generations", 2, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1),
                    new NewTopic("rollout-merges", 1, (short) 1),
                    new NewTopic("replay-generations", 1, (short) 1),
                    new NewTopic("replay-dlq", 1, (short) 1)));
            String sasl = kafka.saslBootstrapServers();
            Map<String, String> security = kafka.sasl().clientSettings();
            Map<String, Object> producerConfig = new HashMap<>(security);
            producerConfig.put("bootstrap.servers", sasl);
            new RolloutPublisher(producerConfig, registry.confluentUrl())
                    .publish("rollouts", "sasl", 300, 300, 64, 0, new AtomicLong());

            Map<String, String> common = new HashMap<>(Map.of(
                    "bootstrap.servers",
                    sasl,
                    "schema.registry.url",
                    registry.confluentUrl(),
                    "rollout.table.uri",
                    root.resolve("table").toString(),
                    "http.port",
                    "0",
                    "rollout.commit.interval.ms",
                    "200",
                    "rollout.lag.publish.interval.ms",
                    "200"));
            security.forEach((k, v) -> common.put(ConfigSources.STREAMS_PREFIX + k, v));
            Map<String, String> ingestProps = new HashMap<>(common);
            ingestProps.putAll(Map.of(
                    "application.id",
                    "secured",
                    "rollout.state.dir",
                    root.resolve("ingest-state").toString(),
                    "rollout.seal.max.age.ms",
                    "300"));
            Path live = write(root.resolve("live.properties"), ingestProps);
            Map<String, String> mergeProps = new HashMap<>(common);
            mergeProps.putAll(Map.of(
                    "application.id",
                    "secured-merge",
                    "rollout.state.dir",
                    root.resolve("merge-state").toString(),
                    "rollout.lag.merged.group",
                    "secured-merged",
                    "rollout.merge.after.generations",
                    "1",
                    "rollout.merge.max.pending.age.ms",
                    "300"));

            try (IngestApp ingest = new IngestApp(IngestConfig.of(new HashMap<>(ingestProps))).start();
                    MergeApp merge = new MergeApp(MergeConfig.of(new HashMap<>(mergeProps))).start();
                    Admin plain = kafka.admin()) {
                // The shadow groups are written by the apps' own admin clients: they move only if those connect.
                assertThat(awaitCommitted(plain, "secured-sealed", 300))
                        .as("sealed group offsets")
                        .isEqualTo(300);
                assertThat(awaitCommitted(plain, "secured-merged", 300))
                        .as("merged group offsets")
                        .isEqualTo(300);
                assertThat(merge.table().countBaseRows()).isEqualTo(300);
                assertThat(ingest.table().countRows()).isEqualTo(300);

                List<String> args = new ArrayList<>(List.of(
                        "status",
                        "--table",
                        root.resolve("table").toString(),
                        "--bootstrap-servers",
                        sasl,
                        "--ingest-group",
                        "secured",
                        "--merge-group",
                        "secured-merge",
                        "--merged-group",
                        "secured-merged"));
                args.addAll(settings(security));
                String status = captureOut(() -> Launcher.run(args.toArray(String[]::new)));
                assertThat(status)
                        .contains("exit=0")
                        .contains("secured-sealed: {0=0, 1=0}")
                        .contains("secured-merged: {0=0, 1=0}")
                        .contains("base rows: 300");

                // Without the settings the same status cannot reach the brokers: the listener really is SASL-only.
                String refused = captureOut(() -> Launcher.run(
                        "status",
                        "--table",
                        root.resolve("table").toString(),
                        "--bootstrap-servers",
                        sasl,
                        "--ingest-group",
                        "secured",
                        "--client-setting",
                        "default.api.timeout.ms=4000",
                        "--client-setting",
                        "request.timeout.ms=2000"));
                assertThat(refused).doesNotContain("exit=0");
            }

            // Replay: the command's admin client positions a new application through the SASL listener.
            Map<String, String> replayProps = new HashMap<>(ingestProps);
            replayProps.putAll(Map.of(
                    "application.id",
                    "secured-replay",
                    "rollout.generations.topic",
                    "replay-generations",
                    "rollout.dlq.topic",
                    "replay-dlq",
                    "rollout.state.dir",
                    root.resolve("replay-state").toString()));
            Path replay = write(root.resolve("replay.properties"), replayProps);
            assertThat(Launcher.run(
                            "replay",
                            replay.toString(),
                            "--live",
                            live.toString(),
                            "--to-offset",
                            "0:10,1:20",
                            "--execute"))
                    .isZero();
            try (Admin plain = kafka.admin()) {
                var committed = plain.listConsumerGroupOffsets("secured-replay")
                        .partitionsToOffsetAndMetadata()
                        .get();
                assertThat(committed.get(new TopicPartition("rollouts", 0)).offset())
                        .isEqualTo(10);
                assertThat(committed.get(new TopicPartition("rollouts", 1)).offset())
                        .isEqualTo(20);
            }
        }
    }

    private static List<String> settings(Map<String, String> security) {
        List<String> args = new ArrayList<>();
        security.forEach((k, v) -> {
            args.add("--client-setting");
            args.add(k + "=" + v);
        });
        return args;
    }

    private static long awaitCommitted(Admin admin, String group, long expected) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        long sum = -1;
        while (System.currentTimeMillis() < deadline) {
            sum = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet().stream()
                    .filter(e -> e.getKey().topic().equals("rollouts"))
                    .mapToLong(e -> e.getValue().offset())
                    .sum();
            if (sum == expected) {
                return sum;
            }
            Thread.sleep(300);
        }
        return sum;
    }

    /** Runs a command with stdout captured; the output ends with "exit=<code>". */
    private static String captureOut(java.util.function.IntSupplier command) {
        PrintStream original = System.out;
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        int code;
        try (PrintStream capture = new PrintStream(buffer, true, StandardCharsets.UTF_8)) {
            System.setOut(capture);
            code = command.getAsInt();
        } finally {
            System.setOut(original);
        }
        String out = buffer.toString(StandardCharsets.UTF_8) + "\nexit=" + code;
        original.println(out);
        return out;
    }

    private static Path write(Path file, Map<String, String> values) throws Exception {
        Properties props = new Properties();
        props.putAll(values);
        Files.createDirectories(file.getParent());
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }
}
