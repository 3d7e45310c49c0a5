package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
import org.junit.jupiter.api.Test;

/**
 * The repair runbooks/merge-cooldown.md describes, followed end to end: a pending generation's files are
 * deleted by hand, reads of its keys and its shard's merges fail naming it, `repair-generation` writes it
 * again from its offsets, and every record is readable and merges again.
 */
class RepairIT {
    @Test
    void aGenerationWhoseFilesWereDeletedIsWrittenAgainFromItsOffsetsAndEveryRecordIsReadable() throws Exception {
        Path root = Path.of("target", "it-repair", UUID.randomUUID().toString()).toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", 2, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1)));
            new RolloutPublisher(kafka.bootstrapServers(), registry.confluentUrl())
                    .publish("rollouts", "repair", 400, 400, 32, 0, new AtomicLong());
            Properties props = new Properties();
            props.put("bootstrap.servers", kafka.bootstrapServers());
            props.put("schema.registry.url", registry.confluentUrl());
            props.put("rollout.table.uri", root.resolve("table").toString());
            props.put("rollout.state.dir", root.resolve("state").toString());
            props.put("rollout.seal.max.rows", "50");
            props.put("rollout.seal.max.age.ms", "300");
            props.put("http.port", "0");
            Path config = root.resolve("ingest.properties");
            try (Writer out = Files.newBufferedWriter(config)) {
                props.store(out, null);
            }
            Map<String, Object> values = new HashMap<>();
            props.forEach((k, v) -> values.put((String) k, v));
            try (IngestApp app = new IngestApp(IngestConfig.of(values)).start()) {
                long deadline = System.currentTimeMillis() + 90_000;
                while (app.table().countRows() < 400 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(300);
                }
                assertThat(app.table().countRows())
                        .as("rows sealed within 90 s")
                        .isEqualTo(400);
            }
            TableLocation location = TableLocation.local(root.resolve("table"));
            String shard = ShardId.of("rollouts", 0);
            SealedGeneration broken;
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                broken = table.generations().pending(shard).get(1);
                FileTrees.deleteRecursively(root.resolve("table").resolve(broken.datasetPath()));
            }
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                assertThatThrownBy(() -> table.list(ListQuery.all(1000)))
                        .isInstanceOf(RolloutTableException.GenerationUnreadable.class)
                        .hasMessageContaining("generation " + broken.generation());
                assertThatThrownBy(
                                () -> table.merges().pass(MergeRequest.of(shard).limits(8, 0)))
                        .isInstanceOf(RolloutTableException.GenerationUnreadable.class);
            }
            assertThat(Launcher.run(
                            "repair-generation",
                            config.toString(),
                            "--shard",
                            shard,
                            "--generation",
                            Long.toString(broken.generation())))
                    .isZero(); // dry run
            assertThat(Launcher.run(
                            "repair-generation",
                            config.toString(),
                            "--shard",
                            shard,
                            "--generation",
                            Long.toString(broken.generation()),
                            "--execute"))
                    .isZero();
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                assertThat(table.countRows()).isEqualTo(400);
                assertThat(table.list(ListQuery.all(1000))).hasSize(400);
                assertThat(table.merges()
                                .pass(MergeRequest.of(shard).limits(0, 0))
                                .mergedAnything())
                        .isTrue();
                assertThat(table.countRows()).isEqualTo(400);
            }
        }
    }
}
