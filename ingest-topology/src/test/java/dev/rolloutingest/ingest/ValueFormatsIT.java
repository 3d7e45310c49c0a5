package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.serde.values.RolloutValues;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.TestCluster;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
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
 * Values in every format producers use, through the real broker and registry: Avro, plain JSON, JSON Schema and
 * Protobuf (its schema registered as .proto text and as a base64 FileDescriptorProto, as Confluent's Java and Python
 * serializers register it) land as the same rows on a topic read as {@code auto}; each format's bad inputs
 * (truncated, wrong types, a required field missing, too large) go to the DLQ with their reason; a topic set to one
 * format dead-letters the others as {@code wrong-format}. JSON Schema and Protobuf schemas registered under the subject
 * that held Avro, which Apicurio answers without {@code schemaType}, are read as the type their text shows.
 */
class ValueFormatsIT {
    private record Sent(String what, byte[] key, byte[] value, String reason) {}

    @Test
    void everyFormatLandsAndItsBadInputsGoToTheDlqWithTheirReason() throws Exception {
        Path root = Path.of("target", "it-value-formats", UUID.randomUUID().toString())
                .toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", 1, (short) 1),
                    new NewTopic("rollouts-pb", 1, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1)));
            int jsonSchema = registry.register("rollouts-json-value", "JSON", RolloutValues.JSON_SCHEMA);
            int protoText = registry.register("rollouts-pb-text", "PROTOBUF", RolloutValues.PROTO);
            int protoBase64 =
                    registry.register("rollouts-pb-base64", "PROTOBUF", RolloutValues.protoDescriptorBase64());
            int protoStringReward = registry.register(
                    "rollouts-pb-bad",
                    "PROTOBUF",
                    RolloutValues.PROTO.replace("optional float reward", "optional string reward"));
            // A JSON Schema or Protobuf producer on the default subject, which held Avro first: Apicurio answers
            // these schemas without schemaType; they are read as the type their text shows.
            registry.register("rollouts-value", null, Rollout.getClassSchema().toString());
            String untypedProto = RolloutValues.PROTO.replace("package rollouts;", "package rollouts.untyped;");
            List<Integer> untyped = List.of(
                    registry.register(
                            "rollouts-value",
                            "JSON",
                            "{\"$comment\":\"under an Avro subject\","
                                    + RolloutValues.JSON_SCHEMA.substring(RolloutValues.JSON_SCHEMA.indexOf('{') + 1)),
                    registry.register("rollouts-value", "PROTOBUF", untypedProto),
                    registry.register("rollouts-value", "PROTOBUF", RolloutValues.protoDescriptorBase64(untypedProto)));
            for (int id : untyped) {
                assertThat(schemaAnswer(registry, id)).as("schema id " + id).doesNotContain("schemaType");
            }
            ConfluentAvroSerializer<Rollout> avro = new ConfluentAvroSerializer<>();
            avro.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);

            RolloutGenerator generator = new RolloutGenerator("formats", 64, 11);
            Map<String, Rollout> good = new LinkedHashMap<>();
            List<Sent> sent = new ArrayList<>();
            for (int i = 0; i < 25; i++) {
                Rollout r = generator.rollout(i, 0);
                good.put(r.getRecordId(), r);
                byte[] value =
                        switch (i % 5) {
                            case 0 -> avro.serialize("rollouts", r);
                            case 1 -> RolloutValues.json(r);
                            case 2 -> RolloutValues.jsonSchemaFramed(jsonSchema, r);
                            case 3 -> RolloutValues.protobufFramed(protoText, RolloutValues.protobuf(r));
                            default -> RolloutValues.protobufFramed(protoBase64, RolloutValues.protobuf(r));
                        };
                sent.add(new Sent("good " + i, key(r.getRecordId()), value, null));
            }
            for (int i = 0; i < untyped.size(); i++) {
                Rollout r = generator.rollout(25 + i, 0);
                good.put(r.getRecordId(), r);
                byte[] value = i == 0
                        ? RolloutValues.jsonSchemaFramed(untyped.get(i), r)
                        : RolloutValues.protobufFramed(untyped.get(i), RolloutValues.protobuf(r));
                sent.add(new Sent("untyped " + i, key(r.getRecordId()), value, null));
            }
            // a producer with a newer compiled class: a field number the schema lacks, skipped and counted
            Rollout newer = generator.rollout(28, 0);
            good.put(newer.getRecordId(), newer);
            byte[] newerMessage =
                    Arrays.copyOf(RolloutValues.protobuf(newer), RolloutValues.protobuf(newer).length + 3);
            newerMessage[newerMessage.length - 3] = (byte) 0x98; // field 99, a varint
            newerMessage[newerMessage.length - 2] = 0x06;
            newerMessage[newerMessage.length - 1] = 1;
            sent.add(new Sent(
                    "newer producer",
                    key(newer.getRecordId()),
                    RolloutValues.protobufFramed(protoText, newerMessage),
                    null));
            String required = "\"record_id\":\"bad\",\"experiment\":\"e\",\"rollout_id\":\"r\",\"sequence_order\":1,"
                    + "\"role\":\"user\",\"created_at\":\"2025-01-01T00:00:00Z\"";
            byte[] json = ("{" + required + "}").getBytes(StandardCharsets.UTF_8);
            byte[] huge =
                    ("{" + required + ",\"content\":\"" + "x".repeat(30_000) + "\"}").getBytes(StandardCharsets.UTF_8);
            byte[] proto = RolloutValues.protobuf(generator.rollout(100, 0));
            sent.add(new Sent("json truncated", key("bad"), Arrays.copyOf(json, json.length / 2), "not-json"));
            sent.add(new Sent(
                    "json wrong type",
                    key("bad"),
                    bytes("{" + required.replace("1,", "\"one\",") + "}"),
                    "wrong-type"));
            sent.add(new Sent(
                    "json missing",
                    key("bad"),
                    bytes("{" + required.replace("\"role\":\"user\",", "") + "}"),
                    "missing-field"));
            sent.add(new Sent("json huge", key("bad"), huge, "payload-too-large"));
            sent.add(new Sent(
                    "json-schema truncated",
                    key("bad"),
                    WireFormat.frame(jsonSchema, Arrays.copyOf(json, 20)),
                    "not-json"));
            sent.add(new Sent(
                    "json-schema wrong type",
                    key("bad"),
                    WireFormat.frame(jsonSchema, bytes("{" + required.replace("\"e\"", "[]") + "}")),
                    "wrong-type"));
            sent.add(new Sent(
                    "json-schema missing",
                    key("bad"),
                    WireFormat.frame(jsonSchema, bytes("{\"record_id\":\"bad\"}")),
                    "missing-field"));
            sent.add(new Sent("json-schema huge", key("bad"), WireFormat.frame(jsonSchema, huge), "payload-too-large"));
            sent.add(new Sent(
                    "protobuf truncated",
                    key("formats-100"),
                    RolloutValues.protobufFramed(protoText, Arrays.copyOf(proto, proto.length - 5)),
                    "not-protobuf"));
            sent.add(new Sent(
                    "protobuf wrong type",
                    key("formats-100"),
                    RolloutValues.protobufFramed(protoStringReward, proto),
                    "wrong-type"));
            sent.add(new Sent(
                    "protobuf missing",
                    key("bad"),
                    RolloutValues.protobufFramed(protoBase64, new byte[] {0x0a, 3, 'b', 'a', 'd'}),
                    "missing-field"));
            byte[] hugeProto = Arrays.copyOf(proto, proto.length + 30_005);
            sent.add(new Sent(
                    "protobuf huge",
                    key("formats-100"),
                    RolloutValues.protobufFramed(protoText, hugeProto),
                    "payload-too-large"));
            sent.add(new Sent("neither", key("bad"), bytes("rollout=1"), "bad-magic-byte"));

            Map<String, Object> props = new HashMap<>(Map.of(
                    "bootstrap.servers", kafka.bootstrapServers(),
                    "schema.registry.url", registry.confluentUrl(),
                    "rollout.table.uri", root.resolve("table").toString(),
                    "rollout.seal.max.age.ms", "300",
                    "rollout.max.payload.bytes", "20000",
                    "rollout.state.dir", root.resolve("state").toString(),
                    "http.port", "0"));
            try (IngestApp app = new IngestApp(IngestConfig.of(props)).start();
                    KafkaProducer<byte[], byte[]> producer = producer(kafka)) {
                for (Sent s : sent) {
                    producer.send(new ProducerRecord<>("rollouts", s.key(), s.value()))
                            .get();
                }
                long deadline = System.currentTimeMillis() + 120_000;
                while (System.currentTimeMillis() < deadline && app.table().countRows() < good.size()) {
                    Thread.sleep(300);
                }
                assertThat(app.table().countRows()).isEqualTo(good.size());
                for (Rollout r : good.values()) {
                    RolloutRow row = app.table().get(r.getRecordId()).orElseThrow();
                    assertThat(row.rollout()).as(r.getRecordId()).isEqualTo(r);
                }
                assertThat(app.registry()
                                .find("rollout.ingest.protobuf.unknown.fields")
                                .counter()
                                .count())
                        .isEqualTo(1.0);
            }
            List<String> expected =
                    sent.stream().map(Sent::reason).filter(r -> r != null).toList();
            List<String[]> dlq = dlq(kafka.bootstrapServers(), expected.size());
            assertThat(dlq).extracting(d -> d[0]).containsExactlyElementsOf(expected);
            assertThat(dlq.get(9)[1]).contains("reward").contains("schema id " + protoStringReward);
            assertThat(dlq.get(2)[1]).contains("role");

            // a topic set to protobuf: Avro and plain JSON values are another format
            props.put("rollout.input.topic", "rollouts-pb");
            props.put("application.id", "ingest-pb");
            props.put("rollout.state.dir", root.resolve("state-pb").toString());
            props.put("rollout.value.formats", "other=json,rollouts-p.*=protobuf");
            Rollout r = generator.rollout(200, 0);
            try (IngestApp app = new IngestApp(IngestConfig.of(props)).start();
                    KafkaProducer<byte[], byte[]> producer = producer(kafka)) {
                producer.send(new ProducerRecord<>(
                                "rollouts-pb",
                                key(r.getRecordId()),
                                RolloutValues.protobufFramed(protoText, RolloutValues.protobuf(r))))
                        .get();
                producer.send(new ProducerRecord<>(
                                "rollouts-pb", key("x"), avro.serialize("rollouts", generator.rollout(201, 0))))
                        .get();
                producer.send(new ProducerRecord<>(
                                "rollouts-pb", key("y"), RolloutValues.json(generator.rollout(202, 0))))
                        .get();
                List<String[]> wrong = dlq(kafka.bootstrapServers(), expected.size() + 2);
                assertThat(wrong.subList(expected.size(), wrong.size()))
                        .extracting(d -> d[0] + ": " + d[1])
                        .satisfiesExactly(
                                a -> assertThat(a)
                                        .startsWith("wrong-format")
                                        .contains("expected protobuf, got avro (schema id"),
                                j -> assertThat(j)
                                        .startsWith("wrong-format")
                                        .contains("expected protobuf, got plain JSON"));
                long deadline = System.currentTimeMillis() + 60_000;
                while (System.currentTimeMillis() < deadline
                        && app.table().get(r.getRecordId()).isEmpty()) {
                    Thread.sleep(300);
                }
                assertThat(app.table().get(r.getRecordId())).isPresent();
            }
        }
    }

    /** The registry's raw answer for a schema id. */
    private static String schemaAnswer(ApicurioRegistry registry, int id) throws Exception {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(registry.confluentUrl() + "/schemas/ids/" + id))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    private static List<String[]> dlq(String bootstrap, int expected) {
        List<String[]> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> dlq = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        bootstrap,
                        ConsumerConfig.GROUP_ID_CONFIG,
                        "dlq-reader-" + UUID.randomUUID(),
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                        "earliest",
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed"),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            dlq.subscribe(List.of("rollouts-dlq"));
            long deadline = System.currentTimeMillis() + 120_000;
            while (records.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : dlq.poll(Duration.ofMillis(300))) {
                    records.add(new String[] {header(r, "rollout.dlq.reason"), header(r, "rollout.dlq.error")});
                }
            }
        }
        return records;
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    private static KafkaProducer<byte[], byte[]> producer(EmbeddedKafka kafka) {
        return new KafkaProducer<>(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                new ByteArraySerializer(),
                new ByteArraySerializer());
    }

    private static byte[] key(String id) {
        return id.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
