package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.AppSettings;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.ipc.ScanOptions;

/**
 * A producer team moves to a newer Rollout schema (a primitive, an array, a map, a nullable record and a nullable
 * string added) while another keeps the old one, through the real registry and broker, with the merge-worker
 * running and the ingest app restarted in the middle: every record lands once, the new fields are columns of the
 * base that lance-core reads, rows written before read null; with evolution off the same records land without them.
 */
class SchemaEvolutionIT {
    private static final Schema CONTRACT = Rollout.getClassSchema();
    private static final Schema DETAIL = new Schema.Parser()
            .parse("{\"type\":\"record\",\"name\":\"ToolDetail\",\"fields\":[{\"name\":\"tool\",\"type\":\"string\"},"
                    + "{\"name\":\"millis\",\"type\":[\"null\",\"long\"],\"default\":null}]}");
    private static final Schema NEWER = newer();
    private static final int PER_PHASE = 60;

    private static Schema newer() {
        List<Schema.Field> fields = new ArrayList<>();
        CONTRACT.getFields().forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        fields.add(new Schema.Field("tool_calls", Schema.create(Schema.Type.INT), "calls made", 0));
        fields.add(new Schema.Field("tags", Schema.createArray(Schema.create(Schema.Type.STRING)), null, List.of()));
        fields.add(new Schema.Field("scores", Schema.createMap(Schema.create(Schema.Type.DOUBLE)), null, Map.of()));
        fields.add(new Schema.Field(
                "detail",
                Schema.createUnion(Schema.create(Schema.Type.NULL), DETAIL),
                null,
                Schema.Field.NULL_DEFAULT_VALUE));
        fields.add(new Schema.Field(
                "note",
                Schema.createUnion(Schema.create(Schema.Type.NULL), Schema.create(Schema.Type.STRING)),
                null,
                Schema.Field.NULL_DEFAULT_VALUE));
        return Schema.createRecord(CONTRACT.getName(), CONTRACT.getDoc(), CONTRACT.getNamespace(), false, fields);
    }

    /** A record of the newer schema: the rollout's fields, then the added ones (values follow from i). */
    private static byte[] newerValue(int schemaId, Rollout rollout, int i) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<Rollout>(CONTRACT).write(rollout, encoder);
        encoder.writeInt(i); // tool_calls
        encoder.writeArrayStart();
        encoder.setItemCount(2);
        encoder.startItem();
        encoder.writeString("t" + i);
        encoder.startItem();
        encoder.writeString("x");
        encoder.writeArrayEnd();
        encoder.writeMapStart();
        encoder.setItemCount(1);
        encoder.startItem();
        encoder.writeString("accuracy");
        encoder.writeDouble(i / 100.0);
        encoder.writeMapEnd();
        if (i % 3 == 0) {
            encoder.writeIndex(0); // detail null
        } else {
            encoder.writeIndex(1);
            encoder.writeString("search");
            encoder.writeIndex(1);
            encoder.writeLong(i * 10L);
        }
        encoder.writeIndex(1);
        encoder.writeString("note-" + i);
        encoder.flush();
        return WireFormat.frame(schemaId, out.toByteArray());
    }

    @Test
    void oldAndNewProducersLandTogetherTheNewFieldsBecomeColumnsAndARestartInTheMiddleLosesNothing() throws Exception {
        Path root = Path.of("target", "it-schema-evolution", UUID.randomUUID().toString())
                .toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            cluster.createDefaultTopics(2);
            kafka.createTopics(List.of(
                    new NewTopic("frozen-rollouts", 1, (short) 1),
                    new NewTopic("frozen-generations", 1, (short) 1),
                    new NewTopic("frozen-dlq", 1, (short) 1)));
            Path tableDir = root.resolve("table");
            Map<String, Object> common = AppSettings.of(cluster).table(tableDir).map();
            Map<String, Object> ingestProps = new HashMap<>(common);
            ingestProps.putAll(Map.of(
                    "rollout.state.dir", root.resolve("ingest-state").toString(),
                    "rollout.seal.max.rows", "25",
                    "rollout.seal.max.age.ms", "300"));
            Map<String, Object> mergeProps = new HashMap<>(common);
            mergeProps.putAll(Map.of(
                    "rollout.state.dir", root.resolve("merge-state").toString(),
                    "rollout.merge.after.generations", "2",
                    "rollout.merge.max.pending.age.ms", "500"));
            ConfluentAvroSerializer<Rollout> old = new ConfluentAvroSerializer<>();
            old.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
            SchemaRegistryClient client =
                    new SchemaRegistryClient(SerdeConfig.from(Map.of("schema.registry.url", registry.confluentUrl())));
            int newerId = client.register("rollouts-value", NEWER);
            RolloutGenerator oldTeam = new RolloutGenerator("old-team", 32, 1);
            RolloutGenerator newTeam = new RolloutGenerator("new-team", 32, 2);

            try (MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start();
                    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                            new ByteArraySerializer(),
                            new ByteArraySerializer())) {
                for (int phase = 0; phase < 2; phase++) {
                    // the ingest app runs one phase each: stopped and started again in the middle
                    try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start()) {
                        for (int k = 0; k < PER_PHASE; k++) {
                            int i = phase * PER_PHASE + k;
                            Rollout before = oldTeam.rollout(i, 0);
                            producer.send(record(before, old.serialize("rollouts", before)));
                            Rollout after = newTeam.rollout(i, 0);
                            producer.send(record(after, newerValue(newerId, after, i)));
                        }
                        producer.flush();
                        awaitRows(ingest.table(), 2L * PER_PHASE * (phase + 1));
                    }
                }
                awaitAllMerged(TableLocation.local(tableDir), 120_000);
            }

            try (RolloutTable table = RolloutTable.open(
                    TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                assertThat(table.countRows()).isEqualTo(4L * PER_PHASE);
                assertThat(table.countBaseRows()).as("every row merged once").isEqualTo(4L * PER_PHASE);
                for (int i = 0; i < 2 * PER_PHASE; i++) {
                    Map<String, Object> added = table.get(RolloutGenerator.recordId("new-team", i))
                            .orElseThrow()
                            .added();
                    assertThat(added.get("tool_calls")).as("row %d", i).isEqualTo(i);
                    assertThat(added.get("tags")).isEqualTo(List.of("t" + i, "x"));
                    assertThat(added.get("scores")).isEqualTo(Map.of("accuracy", i / 100.0));
                    if (i % 3 == 0) {
                        assertThat(added.get("detail")).isNull();
                    } else {
                        Map<String, Object> detail = new LinkedHashMap<>();
                        detail.put("tool", "search");
                        detail.put("millis", i * 10L);
                        assertThat(added.get("detail")).isEqualTo(detail);
                    }
                    assertThat(added.get("note")).isEqualTo("note-" + i);
                    RolloutRow before =
                            table.get(RolloutGenerator.recordId("old-team", i)).orElseThrow();
                    assertThat(before.added())
                            .as("an old producer's row reads null in every added column")
                            .containsOnlyKeys("tool_calls", "tags", "scores", "detail", "note")
                            .allSatisfy((name, value) -> assertThat(value).isNull());
                }
            }
            // lance-core alone sees the columns and their values
            Map<String, Object> toolCalls = new HashMap<>();
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(tableDir.toString())
                            .build();
                    var scanner = base.newScan(new ScanOptions.Builder()
                            .columns(List.of("record_id", "tool_calls", "note"))
                            .build());
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                    for (int r = 0; r < batch.getRowCount(); r++) {
                        toolCalls.put(
                                batch.getVector("record_id").getObject(r).toString(),
                                batch.getVector("tool_calls").getObject(r));
                    }
                }
            }
            assertThat(toolCalls).hasSize(4 * PER_PHASE);
            assertThat(toolCalls.get(RolloutGenerator.recordId("new-team", 7))).isEqualTo(7);
            assertThat(toolCalls.get(RolloutGenerator.recordId("old-team", 7))).isNull();

            // Evolution off: the same newer records land, their added fields dropped and counted.
            Map<String, Object> frozen = new HashMap<>(common);
            frozen.putAll(Map.of(
                    "rollout.table.uri", root.resolve("frozen-table").toString(),
                    "application.id", "frozen",
                    "rollout.input.topic", "frozen-rollouts",
                    "rollout.generations.topic", "frozen-generations",
                    "rollout.dlq.topic", "frozen-dlq",
                    "rollout.state.dir", root.resolve("frozen-state").toString(),
                    "rollout.seal.max.age.ms", "300",
                    "rollout.schema.evolution", "false"));
            try (IngestApp ingest = new IngestApp(IngestConfig.of(frozen)).start();
                    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                            new ByteArraySerializer(),
                            new ByteArraySerializer())) {
                for (int i = 0; i < 10; i++) {
                    Rollout after = newTeam.rollout(i, 0);
                    producer.send(new ProducerRecord<>(
                            "frozen-rollouts",
                            after.getRecordId().getBytes(StandardCharsets.UTF_8),
                            newerValue(newerId, after, i)));
                }
                producer.flush();
                awaitRows(ingest.table(), 10);
                assertThat(ingest.table()
                                .get(RolloutGenerator.recordId("new-team", 3))
                                .orElseThrow()
                                .added())
                        .isEmpty();
                assertThat(ingest.table().generations().addedColumns()).isEmpty();
                assertThat(ingest.registry()
                                .get("rollout.ingest.dropped.fields.records")
                                .counter()
                                .count())
                        .isEqualTo(10);
            }
        }
    }

    private static ProducerRecord<byte[], byte[]> record(Rollout rollout, byte[] value) {
        return new ProducerRecord<>("rollouts", rollout.getRecordId().getBytes(StandardCharsets.UTF_8), value);
    }

    private static void awaitRows(RolloutTable table, long rows) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline && table.countRows() < rows) {
            Thread.sleep(200);
        }
        assertThat(table.countRows()).isEqualTo(rows);
    }

    private static void awaitAllMerged(TableLocation location, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                if (table.generations().shards().stream()
                                .allMatch(s -> table.generations().pending(s).isEmpty())
                        && table.countBaseRows() >= 4L * PER_PHASE) {
                    return;
                }
            }
            Thread.sleep(300);
        }
        throw new AssertionError("not every generation merged within " + timeoutMs + " ms");
    }
}
