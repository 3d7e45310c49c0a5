package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.SwitchableHttpProxy;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A schema registry that is down (503) for 20 s, then one that refuses our credentials (401) for a while:
 * records written with schema ids the ingest app has not seen yet wait for it, none is dead-lettered, and
 * ingest resumes on its own when the registry answers again.
 */
class RegistryOutageIT {
    private static final Path ROOT = Path.of("target", "it-registry-outage").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-registry-outage");

    /** The Rollout schema plus one optional field: a new schema id, as a newer producer would bring. */
    private static Schema evolved(String extraField) {
        Schema base = Rollout.getClassSchema();
        List<Schema.Field> fields = new ArrayList<>();
        for (Schema.Field f : base.getFields()) {
            fields.add(new Schema.Field(f, f.schema()));
        }
        fields.add(new Schema.Field(
                extraField,
                Schema.createUnion(Schema.create(Schema.Type.NULL), Schema.create(Schema.Type.STRING)),
                null,
                Schema.Field.NULL_DEFAULT_VALUE));
        return Schema.createRecord(base.getName(), base.getDoc(), base.getNamespace(), false, fields);
    }

    /** A rollout encoded with the evolved schema (its extra field null), framed with that schema's id. */
    private static byte[] encode(int schemaId, Rollout rollout) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<Rollout>(Rollout.getClassSchema()).write(rollout, encoder);
        encoder.writeIndex(0); // the extra field: null
        encoder.flush();
        return WireFormat.frame(schemaId, out.toByteArray());
    }

    private static void produce(String topic, int schemaId, int from, int to) throws Exception {
        RolloutGenerator generator = new RolloutGenerator("outage", 64, 3);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        cluster.kafka().bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all"),
                new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = from; i < to; i++) {
                Rollout rollout = generator.rollout(i, 0);
                producer.send(new ProducerRecord<>(topic, rollout.getRecordId().getBytes(), encode(schemaId, rollout)))
                        .get();
            }
        }
    }

    @Test
    void recordsWaitForARegistryThatIsDownOrRefusingAndNoneIsDeadLettered() throws Exception {
        String run = "reg-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String dlq = run + "-dlq";
        cluster.kafka()
                .createTopics(List.of(
                        new NewTopic(input, 2, (short) 1),
                        new NewTopic(run + "-generations", 1, (short) 1),
                        new NewTopic(dlq, 1, (short) 1)));
        Path tableDir = ROOT.resolve(run).resolve("table");
        SchemaRegistryClient direct = new SchemaRegistryClient(SerdeConfig.from(
                Map.of("schema.registry.url", cluster.registry().confluentUrl())));
        try (SwitchableHttpProxy proxy = SwitchableHttpProxy.start(
                URI.create("http://127.0.0.1:" + cluster.registry().port()))) {
            Map<String, Object> props = new HashMap<>(Map.of(
                    "bootstrap.servers",
                    cluster.kafka().bootstrapServers(),
                    "schema.registry.url",
                    proxy.url(cluster.registry().confluentUrl()),
                    "rollout.table.uri",
                    tableDir.toString(),
                    "application.id",
                    run,
                    "rollout.input.topic",
                    input,
                    "rollout.generations.topic",
                    run + "-generations",
                    "rollout.dlq.topic",
                    dlq,
                    "rollout.state.dir",
                    ROOT.resolve(run).resolve("state").toString(),
                    "http.port",
                    "0"));
            props.putAll(Map.of(
                    "rollout.seal.max.rows",
                    "50",
                    "rollout.seal.max.age.ms",
                    "500",
                    "rollout.seal.check.interval.ms",
                    "100",
                    "rollout.commit.interval.ms",
                    "200",
                    "schema.registry.retry.backoff.ms",
                    "100"));
            try (IngestApp app = new IngestApp(IngestConfig.of(props)).start()) {
                app.runtime().awaitRunning(Duration.ofSeconds(60));
                int first = direct.register(input + "-value", evolved("first"));
                produce(input, first, 0, 100);
                cluster.awaitAllSealed(run, input, 2, tableDir, run + "-generations", 120);

                // The registry is down for 20 s while records with a schema id the app has not seen arrive.
                int second = direct.register(input + "-value", evolved("second"));
                proxy.answerEveryRequestWith(503);
                long down = System.nanoTime();
                double unavailable = waits(app, "registry-unavailable");
                produce(input, second, 100, 300);
                // Down until the app has met the outage, and for 20 s at least.
                awaitWaits(app, "registry-unavailable", unavailable, 120);
                Thread.sleep(Math.max(0, 20_000 - (System.nanoTime() - down) / 1_000_000));
                assertThat(proxy.refusedRequests())
                        .as("the app did ask the registry meanwhile")
                        .isPositive();
                assertThat(countRows(tableDir))
                        .as("nothing of the second schema landed while the registry was down")
                        .isEqualTo(100);
                long back = System.nanoTime();
                proxy.passThrough();
                cluster.awaitAllSealed(run, input, 2, tableDir, run + "-generations", 120);
                System.out.printf(
                        "registry outage: ingest resumed %.1f s after the registry answered again%n",
                        (System.nanoTime() - back) / 1e9);

                // Then it refuses our credentials (401) for 8 s: not the records' fault either.
                int third = direct.register(input + "-value", evolved("third"));
                proxy.answerEveryRequestWith(401);
                long refusing = System.nanoTime();
                double errors = waits(app, "registry-error");
                produce(input, third, 300, 400);
                // Refusing until the app has met the refusal, and for 8 s at least.
                awaitWaits(app, "registry-error", errors, 120);
                Thread.sleep(Math.max(0, 8_000 - (System.nanoTime() - refusing) / 1_000_000));
                proxy.passThrough();
                cluster.awaitAllSealed(run, input, 2, tableDir, run + "-generations", 120);

                assertThat(app.registry()
                                .find("rollout.ingest.registry.waits")
                                .tag("reason", "registry-unavailable")
                                .counter()
                                .count())
                        .isPositive();
                assertThat(app.registry()
                                .find("rollout.ingest.registry.waits")
                                .tag("reason", "registry-error")
                                .counter()
                                .count())
                        .isPositive();
                assertThat(app.registry().find("rollout.ingest.dlq.records").counters())
                        .isEmpty();
            }
        }
        assertThat(countRows(tableDir)).isEqualTo(400);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        cluster.kafka().bootstrapServers(),
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_uncommitted"),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            var tp = new org.apache.kafka.common.TopicPartition(dlq, 0);
            assertThat(consumer.endOffsets(List.of(tp)).get(tp))
                    .as("nothing was ever written to the DLQ")
                    .isZero();
        }
    }

    /** Until a record waited for the registry for this reason, over {@code before} (within {@code seconds}). */
    private static void awaitWaits(IngestApp app, String reason, double before, int seconds)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (waits(app, reason) <= before) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("no record waited for the registry (" + reason + ") within " + seconds + " s");
            }
            Thread.sleep(100);
        }
    }

    private static double waits(IngestApp app, String reason) {
        var counter = app.registry()
                .find("rollout.ingest.registry.waits")
                .tag("reason", reason)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    private static long countRows(Path tableDir) {
        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            return table.countRows();
        }
    }
}
