package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Under steady load, through the real broker and registry: every batch seals at its row trigger, not at the age
 * trigger, and /health stays healthy. A batch begun while the previous one is still being written ages from its
 * own first record; when it took the previous batch's start instead, every batch of a loaded partition was "too
 * old" a seal age into the run (a trickle of small generations, one every check) and /health called the
 * partition stuck after three seal ages.
 */
class SealUnderLoadIT {
    private static final Path ROOT = Path.of("target", "it-seal-under-load").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-seal-under-load");

    private static final int PARTITIONS = 2;
    private static final long SEAL_AGE_MS = 2_000;

    @Test
    void aLoadedPartitionSealsByRowsAndStaysHealthyPastThreeSealAges() throws Exception {
        String run = "load-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        cluster.createRunTopics(run, input, PARTITIONS);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Map<String, Object> props = cluster.appProps(run, input, work);
        props.putAll(Map.of(
                // a batch fills in well under the seal age even on a slow machine (~100 records/s a partition)
                "rollout.seal.max.rows",
                "100",
                "rollout.seal.max.age.ms",
                String.valueOf(SEAL_AGE_MS),
                "rollout.seal.check.interval.ms",
                "100",
                "rollout.health.stuck.after.ms",
                String.valueOf(3 * SEAL_AGE_MS),
                "streams.commit.interval.ms",
                "200"));
        try (IngestApp app = new IngestApp(IngestConfig.of(props)).start()) {
            app.runtime().awaitRunning(Duration.ofSeconds(60));
            AtomicBoolean producing = new AtomicBoolean(true);
            AtomicLong produced = new AtomicLong();
            Thread producer = new Thread(() -> produceSteadily(input, producing, produced), "steady-producer");
            producer.start();
            // Five seal ages of steady load: past the three after which a partition would count as stuck.
            List<String> unhealthy = new ArrayList<>();
            long until = System.currentTimeMillis() + 5 * SEAL_AGE_MS;
            while (System.currentTimeMillis() < until) {
                HttpResponse<String> health = IngestCluster.health(app);
                if (health.statusCode() != 200) {
                    unhealthy.add(health.statusCode() + " " + health.body());
                }
                Thread.sleep(200);
            }
            double ageSealsUnderLoad = seals(app, "age");
            producing.set(false);
            producer.join();
            cluster.awaitAllSealed(run, input, PARTITIONS, tableDir, run + "-generations", 120);

            assertThat(unhealthy).as("/health under steady load").isEmpty();
            double rowSeals = seals(app, "rows");
            assertThat(rowSeals)
                    .as("generations sealed at their row trigger (%d records produced)", produced.get())
                    .isGreaterThanOrEqualTo(produced.get() / 100 / 2);
            assertThat(ageSealsUnderLoad)
                    .as("age seals while every partition filled its batch within the seal age (%s by rows)", rowSeals)
                    .isLessThanOrEqualTo(PARTITIONS);
        }
    }

    /** About 1,000 records a second, one producer, until told to stop; every send acknowledged. */
    private static void produceSteadily(String topic, AtomicBoolean producing, AtomicLong produced) {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", cluster.registry().confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("steady", 64, 3);
        try (KafkaProducer<String, Rollout> producer = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        cluster.kafka().bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.LINGER_MS_CONFIG,
                        5),
                new StringSerializer(),
                serializer)) {
            for (int i = 0; producing.get(); i++) {
                Rollout rollout = generator.rollout(i, i);
                producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout));
                if (i % 20 == 19) {
                    producer.flush();
                    produced.set(i + 1);
                    Thread.sleep(20);
                }
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static double seals(IngestApp app, String trigger) {
        return app.registry().find("rollout.ingest.seals").tag("trigger", trigger).counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }
}
