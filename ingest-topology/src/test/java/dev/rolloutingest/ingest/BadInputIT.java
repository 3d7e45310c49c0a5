package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Bad input met at write time, on a real broker, registry and table: a record the table refuses survives a crash in
 * the middle of being dead-lettered, and a partition that cannot seal shows on /health. Bad records as a producer sends
 * them: {@link BadRecordBatteryIT}.
 */
class BadInputIT {
    private static final Path ROOT = Path.of("target", "it-bad-input").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-bad-input");

    @Test
    void aRecordTheTableRefusesIsDeadLetteredExactlyOnceEvenWhenTheAppDiesRightAfterSealingTheRest() throws Exception {
        String run = "refused-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String dlq = run + "-dlq";
        cluster.kafka()
                .createTopics(List.of(
                        new NewTopic(input, 1, (short) 1),
                        new NewTopic(run + "-generations", 1, (short) 1),
                        new NewTopic(dlq, 1, (short) 1)));
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Path config = cluster.writeConfig(
                work,
                Map.of(
                        "rollout.input.topic",
                        input,
                        "rollout.generations.topic",
                        run + "-generations",
                        "rollout.dlq.topic",
                        dlq,
                        "rollout.table.uri",
                        tableDir.toString(),
                        "application.id",
                        run,
                        "rollout.state.dir",
                        work.resolve("state").toString()));
        Map<String, String> poisonRefused = Map.of("ROLLOUT_FAULT_UNWRITABLE_RECORD_ID_PREFIX", "poison-");
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", cluster.registry().confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("ok", 32, 3);
        List<String> poisonIds = List.of("poison-1", "poison-2");
        try (KafkaProducer<byte[], byte[]> producer = cluster.rawProducer()) {
            for (int i = 0; i < 50; i++) {
                Rollout rollout = generator.rollout(i, 0);
                if (i < poisonIds.size()) {
                    rollout.setRecordId(
                            poisonIds.get(i)); // offsets 0 and 1: in the first generation, whatever its size
                }
                producer.send(new ProducerRecord<>(
                                input, bytes(rollout.getRecordId()), serializer.serialize(input, rollout)))
                        .get();
            }
        }
        Path log = work.resolve("ingest.log");
        // The first write (the batch without the refused rows) is durable, then the JVM halts before its
        // dead letters, event and offsets commit.
        Map<String, String> haltAfterFirstWrite = new java.util.HashMap<>(poisonRefused);
        haltAfterFirstWrite.put("ROLLOUT_FAULT_HALT_AFTER_WRITES", "1");
        ChildJvm app = ChildJvm.start(FaultyIngestApp.class, List.of(config.toString()), haltAfterFirstWrite, log);
        assertThat(app.waitFor(120)).as("the fault-injected run halts itself").isEqualTo(137);
        app = ChildJvm.start(FaultyIngestApp.class, List.of(config.toString()), poisonRefused, log);
        List<ConsumerRecord<byte[], byte[]>> dead;
        try {
            long deadline = System.currentTimeMillis() + 120_000;
            while (!Files.readString(log).contains("adopting generation") && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
            }
            assertThat(Files.readString(log)).contains("adopting generation");
            cluster.awaitAllSealed(run, input, 1, tableDir, run + "-generations", 120);
            dead = cluster.readAllBytes(dlq);
        } finally {
            app.stop();
        }
        assertThat(dead)
                .extracting(r -> new String(r.key(), StandardCharsets.UTF_8))
                .containsExactlyInAnyOrderElementsOf(poisonIds);
        assertThat(dead).allSatisfy(r -> assertThat(IngestCluster.firstHeader(r, "rollout.dlq.reason"))
                .isEqualTo("unwritable"));
        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            assertThat(table.countRows()).isEqualTo(48);
            assertThat(table.get("poison-1")).isEmpty();
            assertThat(table.get(RolloutGenerator.recordId("ok", 49))).isPresent();
        }
    }

    @Test
    void aPartitionThatCannotSealTurnsHealthUnhealthyNamingItUntilItSealsAgain() throws Exception {
        String run = "stuck-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        cluster.createRunTopics(run, input, 2);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Map<String, Object> props = cluster.appProps(run, input, work);
        props.putAll(Map.of(
                "rollout.seal.max.age.ms",
                "300",
                "rollout.seal.check.interval.ms",
                "100",
                "rollout.seal.write.attempts",
                "2",
                "rollout.health.stuck.after.ms",
                "2000",
                "rollout.health.max.thread.replacements",
                "1",
                // Two replacements within it make /health say so; a failed thread's member leaves the group at once,
                // so the replacements come within 1-2 s of each other (one run's log): 15 s leaves room on a loaded
                // machine, and the test waits it out to see /health recover.
                "rollout.health.thread.replacement.window.ms",
                "15000",
                "streams.commit.interval.ms",
                "200",
                "streams.session.timeout.ms",
                "6000",
                "streams.heartbeat.interval.ms",
                "1000"));
        try (IngestApp app = new IngestApp(IngestConfig.of(props)).start()) {
            app.runtime().awaitRunning(Duration.ofSeconds(60));
            assertThat(health(app).statusCode()).isEqualTo(200);
            // The store refuses every generation write: _mem_wal is a file, not a folder.
            Path memWal = tableDir.resolve("_mem_wal");
            Files.writeString(memWal, "in the way");
            cluster.produce(input, 0, 40, 40, new TreeMap<>(), new AtomicLong(), 0);
            HttpResponse<String> stuck = awaitHealth(app, 503, 60);
            long deadline = System.currentTimeMillis() + 120_000;
            while (!(stuck.body().contains("has held unsealed records for")
                            && stuck.body().contains("were replaced"))
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
                stuck = health(app);
            }
            assertThat(stuck.statusCode()).isEqualTo(503);
            assertThat(stuck.body()).containsPattern("partition [01] has held unsealed records for");
            assertThat(stuck.body()).contains("last seal error");
            assertThat(stuck.body()).contains("stream threads failed and were replaced");
            assertThat(app.registry()
                            .find("rollout.streams.thread.replacements")
                            .counter()
                            .count())
                    .isGreaterThan(1);
            assertThat(app.registry()
                            .find("rollout.ingest.seal.failures")
                            .tag("cause", "storage")
                            .counter()
                            .count())
                    .isPositive();
            assertThat(app.registry()
                            .find("rollout.ingest.seal.failures")
                            .tag("cause", "data")
                            .counter()
                            .count())
                    .as("a store that refuses writes is not the data's fault")
                    .isZero();
            Files.delete(memWal);
            // Healthy again once the replacements are out of the 15 s window.
            assertThat(awaitHealth(app, 200, 180).body()).contains("\"problems\":[]");
            cluster.awaitAllSealed(run, input, 2, tableDir, run + "-generations", 120);
        }
    }

    private static HttpResponse<String> health(IngestApp app) throws Exception {
        return IngestCluster.health(app);
    }

    private static HttpResponse<String> awaitHealth(IngestApp app, int status, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        HttpResponse<String> last = health(app);
        while (last.statusCode() != status && System.currentTimeMillis() < deadline) {
            Thread.sleep(250);
            last = health(app);
        }
        assertThat(last.statusCode()).as("/health: %s", last.body()).isEqualTo(status);
        return last;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
