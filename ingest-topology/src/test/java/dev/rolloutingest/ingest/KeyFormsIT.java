package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.testsupport.TestCluster;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
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
 * Producers as they are configured in the wild, through the real broker and registry: a plain string key, no key,
 * and keys framed as Confluent's Avro, JSON Schema and Protobuf serializers frame them all land; a key that names
 * another record_id, or cannot name one, goes to the DLQ with its reason.
 */
class KeyFormsIT {

    @Test
    void everyKeyFormLandsAndKeysThatDifferGoToTheDlq() throws Exception {
        Path root =
                Path.of("target", "it-key-forms", UUID.randomUUID().toString()).toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", 1, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1)));
            Map<String, Object> props = new HashMap<>(Map.of(
                    "bootstrap.servers", kafka.bootstrapServers(),
                    "schema.registry.url", registry.confluentUrl(),
                    "rollout.table.uri", root.resolve("table").toString(),
                    "rollout.seal.max.age.ms", "300",
                    "rollout.state.dir", root.resolve("state").toString(),
                    "http.port", "0"));
            String url = registry.confluentUrl();
            Schema string = Schema.create(Schema.Type.STRING);
            int avroString = registry.register("rollouts-key", null, string.toString());
            Schema keyRecord = new Schema.Parser()
                    .parse("{\"type\":\"record\",\"name\":\"RolloutKey\",\"fields\":[{\"name\":\"record_id\","
                            + "\"type\":\"string\"}]}");
            int avroRecord = registry.register("other-avro-key", null, keyRecord.toString());
            int json = registry.register(
                    "json-key",
                    "JSON",
                    "{\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"string\"}");
            int proto = registry.register(
                    "proto-key",
                    "PROTOBUF",
                    "syntax = \"proto3\";\nmessage RolloutKey {\n  string record_id = 1;\n}\n");

            ConfluentAvroSerializer<Rollout> values = new ConfluentAvroSerializer<>();
            values.configure(Map.of("schema.registry.url", url), false);
            RolloutGenerator generator = new RolloutGenerator("keys", 32, 3);
            try (IngestApp app = new IngestApp(IngestConfig.of(props)).start();
                    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                            new ByteArraySerializer(),
                            new ByteArraySerializer())) {
                for (int i = 0; i < 60; i++) {
                    Rollout rollout = generator.rollout(i, 0);
                    String id = rollout.getRecordId().toString();
                    byte[] key =
                            switch (i % 6) {
                                case 0 -> id.getBytes(StandardCharsets.UTF_8);
                                case 1 -> null;
                                case 2 -> WireFormat.frame(avroString, avro(string, id));
                                case 3 -> WireFormat.frame(avroRecord, avro(keyRecord, record(keyRecord, id)));
                                case 4 -> WireFormat.frame(json, ("\"" + id + "\"").getBytes(StandardCharsets.UTF_8));
                                default -> WireFormat.frame(proto, protoKey(id));
                            };
                    producer.send(new ProducerRecord<>("rollouts", key, values.serialize("rollouts", rollout)))
                            .get();
                }
                Rollout other = generator.rollout(100, 0);
                producer.send(new ProducerRecord<>(
                                "rollouts",
                                WireFormat.frame(avroString, avro(string, "someone-else")),
                                values.serialize("rollouts", other)))
                        .get();
                Schema integer = Schema.create(Schema.Type.INT);
                int intKey = registry.register("int-key", null, integer.toString());
                producer.send(new ProducerRecord<>(
                                "rollouts",
                                WireFormat.frame(intKey, avro(integer, 7)),
                                values.serialize("rollouts", generator.rollout(101, 0))))
                        .get();

                long deadline = System.currentTimeMillis() + 120_000;
                while (System.currentTimeMillis() < deadline && app.table().countRows() < 60) {
                    Thread.sleep(300);
                }
                assertThat(app.table().countRows()).isEqualTo(60);
                for (int i = 0; i < 60; i++) {
                    assertThat(app.table().get(RolloutGenerator.recordId("keys", i)))
                            .as("key form %d", i % 6)
                            .isPresent();
                }
                assertThat(app.table().get(other.getRecordId().toString())).isEmpty();
                assertThat(app.registry()
                                .get("rollout.ingest.keyless.records")
                                .counter()
                                .count())
                        .isEqualTo(10);
            }
            assertThat(dlqReasons(kafka.bootstrapServers(), 2)).containsExactly("key-mismatch", "key-unreadable");
        }
    }

    private static List<String> dlqReasons(String bootstrap, int expected) {
        List<String> reasons = new java.util.ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> dlq = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                        ConsumerConfig.GROUP_ID_CONFIG, "dlq-reader",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            dlq.subscribe(List.of("rollouts-dlq"));
            long deadline = System.currentTimeMillis() + 120_000;
            while (reasons.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : dlq.poll(Duration.ofMillis(300))) {
                    reasons.add(new String(
                            r.headers().lastHeader("rollout.dlq.reason").value(), StandardCharsets.UTF_8));
                }
            }
        }
        return reasons;
    }

    private static GenericRecord record(Schema schema, String id) {
        GenericRecord record = new GenericData.Record(schema);
        record.put("record_id", id);
        return record;
    }

    private static byte[] avro(Schema schema, Object value) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<>(schema).write(value, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    /** Confluent's Protobuf framing of the first message: index [0] as one 0 byte, then field 1 as a string. */
    private static byte[] protoKey(String id) {
        byte[] bytes = id.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0);
        out.write(0x0a);
        out.write(bytes.length);
        out.writeBytes(bytes);
        return out.toByteArray();
    }
}
