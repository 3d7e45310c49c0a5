package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The ingest app with its table on a real S3 API, fed by an independent producer: schema registered with
 * plain REST calls, records framed by hand and encoded with plain Avro (none of this project's serde),
 * some of them unusable. Every good record is readable once; every bad one is in the DLQ with its reason.
 */
class IngestOnS3IT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void anIndependentProducersRecordsLandInAnS3TableAndBadOnesInTheDlq() throws Exception {
        Path root =
                Path.of("target", "it-ingest-s3", UUID.randomUUID().toString()).toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root, "rollouts")) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            EmbeddedS3 s3 = cluster.s3();
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", 2, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1)));
            Map<String, Object> props = new HashMap<>(Map.of(
                    "bootstrap.servers",
                    kafka.bootstrapServers(),
                    "schema.registry.url",
                    registry.confluentUrl(),
                    "rollout.table.uri",
                    s3.uri("table"),
                    "rollout.seal.max.rows",
                    "50",
                    "rollout.seal.max.age.ms",
                    "500",
                    "rollout.state.dir",
                    root.resolve("state").toString(),
                    "http.port",
                    "0"));
            s3.lanceStorageOptions().forEach((k, v) -> props.put("rollout.table.storage." + k, v));
            TableLocation location = new TableLocation(s3.uri("table"), s3.lanceStorageOptions());

            int schemaId = register(
                    registry.confluentUrl() + "/subjects/rollouts-value/versions",
                    Rollout.getClassSchema().toString());
            RolloutGenerator generator = new RolloutGenerator("indep", 300, 5);
            try (IngestApp app = new IngestApp(IngestConfig.of(props)).start();
                    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                            Map.of(
                                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                                    kafka.bootstrapServers(),
                                    ProducerConfig.ACKS_CONFIG,
                                    "all"),
                            new ByteArraySerializer(),
                            new ByteArraySerializer())) {
                for (int i = 0; i < 200; i++) {
                    Rollout rollout = generator.rollout(i, 0);
                    producer.send(
                            new ProducerRecord<>("rollouts", bytes(rollout.getRecordId()), frame(schemaId, rollout)));
                }
                Rollout orphan = generator.rollout(999, 0);
                producer.send(new ProducerRecord<>("rollouts", 0, bytes("x"), bytes("{\"not\": \"avro\"}")));
                producer.send(new ProducerRecord<>("rollouts", 0, bytes("y"), frameRaw(424_242, new byte[] {2, 0})));
                producer.send(new ProducerRecord<>("rollouts", 1, bytes("someone-else"), frame(schemaId, orphan)));
                producer.flush();

                long deadline = System.currentTimeMillis() + 90_000;
                long readable = 0;
                while (System.currentTimeMillis() < deadline && readable < 200) {
                    Thread.sleep(500);
                    readable = app.table().countRows();
                }
                assertThat(readable).isEqualTo(200);
            }
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                assertThat(table.list(ListQuery.all(1000)))
                        .hasSize(200)
                        .allSatisfy(r -> assertThat(r.rollout().getExperiment()).isEqualTo("indep"));
                assertThat(table.get("indep-17")
                                .orElseThrow()
                                .rollout()
                                .getBinaryPayload()
                                .remaining())
                        .isEqualTo(300);
                assertThat(table.get("indep-999")).isEmpty();
            }
            List<String> reasons = new ArrayList<>();
            try (KafkaConsumer<byte[], byte[]> dlq = new KafkaConsumer<>(
                    Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                            kafka.bootstrapServers(),
                            ConsumerConfig.GROUP_ID_CONFIG,
                            "dlq-reader",
                            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                            "earliest",
                            ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                            "read_committed"),
                    new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                dlq.subscribe(List.of("rollouts-dlq"));
                long deadline = System.currentTimeMillis() + 120_000;
                while (reasons.size() < 3 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : dlq.poll(Duration.ofMillis(300))) {
                        reasons.add(new String(
                                r.headers().lastHeader("rollout.dlq.reason").value(), StandardCharsets.UTF_8));
                    }
                }
            }
            // {"not": "avro"} is a plain JSON value to rollout.value.format=auto, short of the contract's fields
            assertThat(reasons).containsExactlyInAnyOrder("missing-field", "unknown-schema-id", "key-mismatch");
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static int register(String url, String schema) throws Exception {
        HttpResponse<String> response = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(url))
                                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                                .POST(HttpRequest.BodyPublishers.ofString(JSON.createObjectNode()
                                        .put("schema", schema)
                                        .toString()))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        return JSON.readTree(response.body()).get("id").asInt();
    }

    /** Plain Avro, no logical-type conversions: timestamps as raw micros. */
    private static byte[] frame(int schemaId, Rollout rollout) throws Exception {
        Schema schema = Rollout.getClassSchema();
        GenericRecord record = new GenericData.Record(schema);
        for (Schema.Field f : schema.getFields()) {
            Object value = rollout.get(f.pos());
            if (value instanceof java.time.Instant instant) {
                value = instant.getEpochSecond() * 1_000_000L + instant.getNano() / 1_000;
            }
            record.put(f.name(), value);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(schema).write(record, encoder);
        encoder.flush();
        return frameRaw(schemaId, out.toByteArray());
    }

    private static byte[] frameRaw(int schemaId, byte[] body) {
        return ByteBuffer.allocate(5 + body.length)
                .put((byte) 0)
                .putInt(schemaId)
                .put(body)
                .array();
    }
}
