package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.values.RolloutValues;
import dev.rolloutingest.serde.values.ValueDeserializer;
import dev.rolloutingest.serde.values.ValueFormat;
import dev.rolloutingest.serde.values.ValueFormats;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationBatch;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The same rollouts as Avro, JSON (plain and JSON Schema) and Protobuf values, side by side in one run on the
 * embedded services: (1) one thread decoding each format's values into a batch's columns (what RecordCheck does per
 * record), warm; (2) the ingest topology in its own JVM reading a topic of each format, from its first seal to its
 * last full one. Each as a ratio to Avro's figure of the same run. Prints Markdown.
 */
final class ValueFormatBench {
    private static final int GENERATION_ROWS = IngestBench.GENERATION_ROWS;

    private final Path dir;
    private final int records;
    private final int partitions;
    private final int payloadBytes;
    private final List<ValueFormat> formats;
    private final boolean topology;

    ValueFormatBench(
            Path dir, int records, int partitions, int payloadBytes, List<ValueFormat> formats, boolean topology) {
        this.dir = dir.toAbsolutePath();
        this.records = records;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
        this.formats = formats;
        this.topology = topology;
    }

    void run() throws Exception {
        Path root = dir.resolve("value-format-bench");
        FileTrees.deleteRecursively(root);
        try (EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(root.resolve("registry"), Duration.ofSeconds(120))) {
            kafka.createTopics(List.of(
                    new NewTopic("rollout-generations", 1, (short) 1), new NewTopic("rollouts-dlq", 1, (short) 1)));
            Map<ValueFormat, List<byte[]>> values = encode(registry);
            System.out.printf(
                    "%,d rollouts per format, %d-byte payloads, %d partitions; generations of %,d rows%n%n",
                    records, payloadBytes, partitions, GENERATION_ROWS);
            System.out.println(
                    "| value format | bytes/value | decode rows/s (1 thread) | vs avro | topology rows/s | vs avro |");
            System.out.println("|---|---|---|---|---|---|");
            Map<ValueFormat, double[]> figures = new LinkedHashMap<>();
            for (ValueFormat format : formats) {
                double decode = decode(registry, format, values.get(format));
                double rows = Double.NaN;
                if (topology) {
                    preload(kafka, format, values.get(format));
                    rows = topology(kafka, registry, root, format);
                }
                figures.put(format, new double[] {decode, rows});
            }
            double[] avro = figures.get(ValueFormat.AVRO); // the ratios only where Avro ran beside
            for (Map.Entry<ValueFormat, double[]> e : figures.entrySet()) {
                long bytes =
                        values.get(e.getKey()).stream().mapToLong(v -> v.length).sum();
                System.out.printf(
                        "| %s | %,d | %,.0f | %s | %s | %s |%n",
                        e.getKey(),
                        bytes / records,
                        e.getValue()[0],
                        avro == null ? "" : String.format("%.2f", e.getValue()[0] / avro[0]),
                        topology ? String.format("%,.0f", e.getValue()[1]) : "",
                        topology && avro != null ? String.format("%.2f", e.getValue()[1] / avro[1]) : "");
            }
        }
    }

    private Map<ValueFormat, List<byte[]>> encode(ApicurioRegistry registry) {
        ConfluentAvroSerializer<Rollout> avro = BenchClients.rolloutSerializer(registry);
        int jsonSchema = registry.register("rollouts-json-schema-value", "JSON", RolloutValues.JSON_SCHEMA);
        int proto = registry.register("rollouts-protobuf-value", "PROTOBUF", RolloutValues.PROTO);
        RolloutGenerator generator = new RolloutGenerator("bench", payloadBytes, 7);
        Map<ValueFormat, List<byte[]>> values = new LinkedHashMap<>();
        for (ValueFormat format : formats) {
            values.put(format, new ArrayList<>(records));
        }
        for (int i = 0; i < records; i++) {
            Rollout r = generator.rollout(i, 0);
            for (ValueFormat format : formats) {
                values.get(format)
                        .add(
                                switch (format) {
                                    case AVRO -> avro.serialize("rollouts-avro", r);
                                    case JSON -> RolloutValues.json(r);
                                    case JSON_SCHEMA -> RolloutValues.jsonSchemaFramed(jsonSchema, r);
                                    case PROTOBUF -> RolloutValues.protobufFramed(proto, RolloutValues.protobuf(r));
                                    case AUTO -> throw new IllegalArgumentException("auto is no format of its own");
                                });
            }
        }
        return values;
    }

    /** Rows/s of one thread decoding the values into batches, the second of two passes (the first warms the JIT). */
    private double decode(ApicurioRegistry registry, ValueFormat format, List<byte[]> values) {
        Map<String, Object> serde = Map.of("schema.registry.url", registry.confluentUrl());
        ConfluentAvroDeserializer<Rollout> avro = new ConfluentAvroDeserializer<>(null, Rollout.class);
        avro.configure(serde, false);
        ValueDeserializer deserializer = new ValueDeserializer(
                ValueFormats.all(format),
                avro,
                new SchemaRegistryClient(SerdeConfig.from(serde)),
                true,
                (id, f) -> {},
                (id, f) -> {},
                (id, f) -> {},
                100);
        String topic = "rollouts-" + format;
        double rate = 0;
        try (BufferAllocator allocator = new RootAllocator()) {
            for (int pass = 0; pass < 2; pass++) {
                Instant ingested = Instant.now();
                long started = System.nanoTime();
                GenerationBatch batch = GenerationBatch.create(allocator);
                try {
                    for (int i = 0; i < values.size(); i++) {
                        if (batch.size() == GENERATION_ROWS) {
                            batch.close();
                            batch = GenerationBatch.create(allocator);
                        }
                        deserializer.deserializeFields(topic, values.get(i), batch.rowReader(0, i, ingested));
                        batch.commitStaged();
                    }
                } finally {
                    batch.close();
                }
                rate = values.size() / ((System.nanoTime() - started) / 1e9);
            }
        }
        return rate;
    }

    private void preload(EmbeddedKafka kafka, ValueFormat format, List<byte[]> values) throws Exception {
        String topic = "rollouts-" + format;
        kafka.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)));
        try (KafkaProducer<byte[], byte[]> producer = BenchClients.bulkProducer(kafka)) {
            for (int i = 0; i < values.size(); i++) {
                producer.send(new ProducerRecord<>(
                        topic, RolloutGenerator.recordId("bench", i).getBytes(), values.get(i)));
            }
            producer.flush();
        }
    }

    /** Rows/s the topology seals from its first seal to the last full generation (the age-triggered tail left out). */
    private double topology(EmbeddedKafka kafka, ApicurioRegistry registry, Path root, ValueFormat format)
            throws Exception {
        String topic = "rollouts-" + format;
        Path work = root.resolve("topology-" + format);
        Path tableDir = work.resolve("table");
        Files.createDirectories(work);
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        props.put("rollout.table.uri", tableDir.toString());
        props.put("application.id", "bench-formats-" + format);
        props.put("rollout.state.dir", work.resolve("state").toString());
        props.put("rollout.input.topic", topic);
        props.put("rollout.value.format", format.setting());
        props.put("http.port", "0");
        props.put("rollout.seal.max.rows", Integer.toString(GENERATION_ROWS));
        props.put("rollout.seal.max.age.ms", "30000");
        props.put("rollout.max.payload.bytes", Integer.toString(Math.max(1_000_000, payloadBytes * 3)));
        Path config = work.resolve("ingest.properties");
        try (Writer out = Files.newBufferedWriter(config)) {
            props.store(out, null);
        }
        long steadyRows = records - (long) partitions * GENERATION_ROWS;
        long started = System.nanoTime();
        try (ChildJvm app = ChildJvm.start(
                IngestApp.class, List.of(config.toString()), Map.of(), work.resolve("ingest.log"), "-Xmx1g")) {
            long firstSeal = 0;
            long firstRows = 0;
            RolloutTable table = null;
            try {
                while (true) {
                    if (table == null) {
                        try {
                            table = RolloutTable.open(
                                    TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry());
                        } catch (RuntimeException notYet) {
                            Thread.sleep(200);
                            continue;
                        }
                    }
                    long sealed = 0;
                    for (int p = 0; p < partitions; p++) {
                        sealed += table.generations().sealedRecords(ShardId.of(topic, p));
                    }
                    long now = System.nanoTime();
                    if (sealed > 0 && firstSeal == 0) {
                        firstSeal = now;
                        firstRows = sealed;
                    }
                    if (sealed >= steadyRows) {
                        return (sealed - firstRows) / ((now - firstSeal) / 1e9);
                    }
                    if (!app.isAlive() || now - started > 600e9) {
                        throw new IllegalStateException("the ingest app did not seal " + format + "; see " + app.log());
                    }
                    Thread.sleep(100);
                }
            } finally {
                if (table != null) {
                    table.close();
                }
                app.stop();
            }
        }
    }
}
