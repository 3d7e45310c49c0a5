package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Where a restarted partition stopped is the input offset the application committed: records processed in committed
 * transactions but not sealed are read again up to it (rows back in the buffer, their dead letters not sent twice),
 * whether the partition is idle after the restart (the committed offset is asked for) or new records arrive (the first
 * one Streams delivers marks it).
 */
class RestartPositionIT {
    private static final Path ROOT = Path.of("target", "it-restart-position").toAbsolutePath();
    private static final Map<String, String> NEVER_SEAL =
            Map.of("ROLLOUT_SEAL_MAX_ROWS", "1000000", "ROLLOUT_SEAL_MAX_AGE_MS", "3600000");
    private static final Map<String, String> SEAL_SOON = Map.of("ROLLOUT_SEAL_MAX_AGE_MS", "2000");

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-restart-position");

    private final RolloutGenerator generator = new RolloutGenerator("restart", 64, 5);
    private ConfluentAvroSerializer<Rollout> serializer;
    private int next;

    @Test
    void aRestartReadsBackUpToTheCommittedOffsetWhetherThePartitionIsIdleOrNot() throws Exception {
        String run = "pos-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String events = run + "-generations";
        String dlq = run + "-dlq";
        cluster.createRunTopics(run, input, 1);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Path config = cluster.writeConfig(
                work,
                Map.of(
                        "rollout.input.topic", input,
                        "rollout.generations.topic", events,
                        "rollout.dlq.topic", dlq,
                        "rollout.table.uri", tableDir.toString(),
                        "application.id", run,
                        "rollout.state.dir", work.resolve("state").toString()));
        serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", cluster.registry().confluentUrl()), false);
        Path log = work.resolve("ingest.log");

        // 1. Processed and committed, nothing sealed, killed; restarted with no new record: the partition is idle.
        produce(input, 95, 5);
        ChildJvm app = ChildJvm.start(IngestApp.class, List.of(config.toString()), NEVER_SEAL, log);
        cluster.awaitCommitted(run, input, 1, 120);
        app.kill();
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), SEAL_SOON, log);
        try {
            cluster.awaitAllSealed(run, input, 1, tableDir, events, 120);
        } finally {
            app.stop();
        }
        assertLanded(tableDir, input, dlq, 95, 5);

        // 2. The same, but new records wait when it restarts: the first one delivered marks where it stopped.
        produce(input, 48, 2);
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), NEVER_SEAL, log);
        cluster.awaitCommitted(run, input, 1, 120);
        app.kill();
        produce(input, 10, 0);
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), SEAL_SOON, log);
        try {
            cluster.awaitAllSealed(run, input, 1, tableDir, events, 120);
        } finally {
            app.stop();
        }
        assertLanded(tableDir, input, dlq, 95 + 48 + 10, 5 + 2);
    }

    /** {@code valid} rollouts, {@code undecodable} values spread among them (never last: a seal ends on a row). */
    private void produce(String input, int valid, int undecodable) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = cluster.rawProducer()) {
            for (int i = 0; i < valid; i++) {
                if (undecodable > 0 && i % (valid / undecodable) == 1 && i / (valid / undecodable) < undecodable) {
                    producer.send(new ProducerRecord<>(input, bytes("bad-" + next), bytes("not a rollout")))
                            .get();
                }
                Rollout rollout = generator.rollout(next++, 0);
                producer.send(new ProducerRecord<>(
                                input, bytes(rollout.getRecordId()), serializer.serialize(input, rollout)))
                        .get();
            }
        }
    }

    private static void assertLanded(Path tableDir, String input, String dlq, long rows, int deadLetters) {
        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            assertThat(table.countRows()).as("distinct rows").isEqualTo(rows);
            List<SealedGeneration> sealed = table.generations().pending(ShardId.of(input, 0));
            assertThat(sealed.stream().mapToLong(SealedGeneration::rows).sum())
                    .as("rows sealed, each once")
                    .isEqualTo(rows);
            long next = 0;
            for (SealedGeneration g : sealed) {
                assertThat(g.firstOffset())
                        .as("generation %d starts where the last ended", g.generation())
                        .isEqualTo(next);
                next = g.lastOffset() + 1;
            }
        }
        assertThat(cluster.readAllBytes(dlq))
                .as("dead letters, each once")
                .hasSize(deadLetters)
                .extracting(r -> new String(r.key(), StandardCharsets.UTF_8))
                .doesNotHaveDuplicates();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
