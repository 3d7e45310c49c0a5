package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.TestCluster;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/**
 * `rollout-ingest replay`: a new application starts at given offsets, of one topic or of every topic it reads; an
 * existing one is refused.
 */
class ReplayIT {
    @Test
    void aNewApplicationReplaysFromTheGivenOffsetsAndAnExistingOneIsRefused() throws Exception {
        Path root = Path.of("target", "it-replay", UUID.randomUUID().toString()).toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", 2, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1),
                    new NewTopic("replay-generations", 1, (short) 1),
                    new NewTopic("replay-dlq", 1, (short) 1)));
            new RolloutPublisher(kafka.bootstrapServers(), registry.confluentUrl())
                    .publish("rollouts", "replay", 300, 300, 16, 0, new AtomicLong());

            Path first = config(root, "first", kafka, registry, Map.of());
            assertThat(ingestUntil(first, 300)).hasSize(300);

            // The first application's group has offsets: replaying it would skip what it sealed.
            Path again = config(
                    root,
                    "first",
                    kafka,
                    registry,
                    Map.of("rollout.generations.topic", "replay-generations", "rollout.dlq.topic", "replay-dlq"));
            assertThat(Launcher.run(
                            "replay", again.toString(), "--live", first.toString(), "--to-earliest", "--execute"))
                    .isEqualTo(2);
            // A replay that would share the live app's generations or DLQ topic is refused.
            Path sharing = config(root, "sharing", kafka, registry, Map.of());
            assertThat(Launcher.run("replay", sharing.toString(), "--live", first.toString(), "--to-earliest"))
                    .isEqualTo(2);

            Path second = config(
                    root,
                    "second",
                    kafka,
                    registry,
                    Map.of("rollout.generations.topic", "replay-generations", "rollout.dlq.topic", "replay-dlq"));
            // Offsets outside the log are refused.
            assertThat(Launcher.run("replay", second.toString(), "--live", first.toString(), "--to-offset", "0:100000"))
                    .isEqualTo(2);
            assertThat(Launcher.run(
                            "replay", second.toString(), "--live", first.toString(), "--to-offset", "0:100,1:100"))
                    .isZero(); // dry run
            // Partition 1 not given: it starts at its end, nothing replayed there.
            assertThat(Launcher.run(
                            "replay",
                            second.toString(),
                            "--live",
                            first.toString(),
                            "--to-offset",
                            "0:100",
                            "--execute"))
                    .isZero();
            try (var admin = kafka.admin()) {
                var committed = admin.listConsumerGroupOffsets("second")
                        .partitionsToOffsetAndMetadata()
                        .get();
                assertThat(committed).as("a position for every partition").hasSize(2);
                assertThat(committed
                                .get(new org.apache.kafka.common.TopicPartition("rollouts", 1))
                                .offset())
                        .isEqualTo(admin.listOffsets(Map.of(
                                        new org.apache.kafka.common.TopicPartition("rollouts", 1),
                                        org.apache.kafka.clients.admin.OffsetSpec.latest()))
                                .all()
                                .get()
                                .get(new org.apache.kafka.common.TopicPartition("rollouts", 1))
                                .offset());
            }
            List<RolloutRow> replayed = ingestUntil(second, 1);
            assertThat(replayed).isNotEmpty().allSatisfy(r -> {
                assertThat(r.sourcePartition()).isZero();
                assertThat(r.sourceOffset()).isGreaterThanOrEqualTo(100);
            });

            // An app reading several topics (here by a pattern): a position for every partition of every topic
            kafka.createTopics(List.of(
                    new NewTopic("more-rollouts", 1, (short) 1),
                    new NewTopic("third-generations", 1, (short) 1),
                    new NewTopic("third-dlq", 1, (short) 1)));
            new RolloutPublisher(kafka.bootstrapServers(), registry.confluentUrl())
                    .publish("more-rollouts", "more", 50, 50, 16, 0, new AtomicLong());
            Path third = config(
                    root,
                    "third",
                    kafka,
                    registry,
                    Map.of(
                            "rollout.input.topic.pattern", "(more-)?rollouts",
                            "rollout.generations.topic", "third-generations",
                            "rollout.dlq.topic", "third-dlq"));
            assertThat(Launcher.run("replay", third.toString(), "--live", first.toString(), "--to-offset", "0:100"))
                    .as("partition:offset names no topic when the app reads two")
                    .isNotZero();
            assertThat(Launcher.run(
                            "replay",
                            third.toString(),
                            "--live",
                            first.toString(),
                            "--to-offset",
                            "more-rollouts:0:10,rollouts:0:100",
                            "--execute"))
                    .isZero();
            TopicPartition more = new TopicPartition("more-rollouts", 0);
            TopicPartition zero = new TopicPartition("rollouts", 0);
            TopicPartition one = new TopicPartition("rollouts", 1);
            long zeroEnd;
            try (var admin = kafka.admin()) {
                Map<TopicPartition, Long> committed = new HashMap<>();
                admin.listConsumerGroupOffsets("third")
                        .partitionsToOffsetAndMetadata()
                        .get()
                        .forEach((tp, offset) -> committed.put(tp, offset.offset()));
                var ends = admin.listOffsets(Map.of(zero, OffsetSpec.latest(), one, OffsetSpec.latest()))
                        .all()
                        .get();
                zeroEnd = ends.get(zero).offset();
                assertThat(committed)
                        .containsExactlyInAnyOrderEntriesOf(
                                Map.of(more, 10L, zero, 100L, one, ends.get(one).offset()));
            }
            List<RolloutRow> fromBoth = ingestUntil(third, (int) (40 + zeroEnd - 100));
            assertThat(fromBoth).hasSize((int) (40 + zeroEnd - 100));
            assertThat(fromBoth.stream().filter(r -> r.recordId().startsWith("more-")))
                    .hasSize(40)
                    .allSatisfy(r -> assertThat(r.sourceOffset()).isGreaterThanOrEqualTo(10));
            assertThat(fromBoth.stream().filter(r -> !r.recordId().startsWith("more-")))
                    .allSatisfy(r -> {
                        assertThat(r.sourcePartition()).isZero();
                        assertThat(r.sourceOffset()).isGreaterThanOrEqualTo(100);
                    });
        }
    }

    private static Path config(
            Path root, String name, EmbeddedKafka kafka, ApicurioRegistry registry, Map<String, String> extra)
            throws Exception {
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        props.put("application.id", name);
        props.put("rollout.table.uri", root.resolve(name + "-table").toString());
        props.put("rollout.state.dir", root.resolve(name + "-state").toString());
        props.put("rollout.seal.max.age.ms", "300");
        props.put("http.port", "0");
        props.putAll(extra);
        Path file = root.resolve(name + (extra.isEmpty() ? "" : "-replay") + ".properties");
        Files.createDirectories(root);
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }

    /** Runs the ingest app of a config until its table holds {@code rows} readable rows. */
    private static List<RolloutRow> ingestUntil(Path config, int rows) throws Exception {
        Map<String, Object> values = new HashMap<>();
        Properties props = new Properties();
        try (var in = Files.newInputStream(config)) {
            props.load(in);
        }
        props.forEach((k, v) -> values.put((String) k, v));
        try (IngestApp app = new IngestApp(IngestConfig.of(values)).start()) {
            long deadline = System.currentTimeMillis() + 90_000;
            while (System.currentTimeMillis() < deadline && app.table().countRows() < rows) {
                Thread.sleep(300);
            }
            Thread.sleep(1_000); // nothing more arrives
            return app.table().list(ListQuery.all(10_000));
        }
    }
}
