package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The same rollouts ingested into 1, 10 and 100 tables (routed by experiment), side by side in one run on the embedded
 * services: rows/s sealed, generations sealed per minute and rows per generation, and rows/s against the one-table
 * run. Each table count has its own preloaded topic of the same records, their experiments cycling over that many
 * names. The seal triggers count per partition, so more tables means smaller generations, not more seals.
 */
final class ManyTablesBench {
    private final Path dir;
    private final int records;
    private final int partitions;
    private final int payloadBytes;
    private final int[] tableCounts;
    private final int sealRows;

    ManyTablesBench(Path dir, int records, int partitions, int payloadBytes, int[] tableCounts, int sealRows) {
        this.dir = dir.toAbsolutePath();
        this.records = records;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
        this.tableCounts = tableCounts;
        this.sealRows = sealRows;
    }

    void run() throws Exception {
        Path root = dir.resolve("many-tables-bench");
        FileTrees.deleteRecursively(root);
        try (EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(root.resolve("registry"), Duration.ofSeconds(120))) {
            List<NewTopic> topics = new ArrayList<>();
            for (int tables : tableCounts) {
                topics.add(new NewTopic("rollouts-" + tables, partitions, (short) 1));
            }
            topics.add(new NewTopic("rollout-generations", 1, (short) 1));
            topics.add(new NewTopic("rollouts-dlq", 1, (short) 1));
            kafka.createTopics(topics);
            for (int tables : tableCounts) {
                preload(kafka, registry, tables);
            }
            System.out.printf(
                    "%,d rollouts, %d-byte payloads, %d partitions, rollout.seal.max.rows=%,d; route ${experiment}%n%n",
                    records, payloadBytes, partitions, sealRows);
            System.out.println(
                    "| tables | rows/s sealed | vs 1 table | generations | generations/min | rows/generation | seals/min per"
                            + " partition | peak RSS MiB |");
            System.out.println("|---|---|---|---|---|---|---|---|");
            double one = Double.NaN;
            for (int tables : tableCounts) {
                Result r = ingest(kafka, registry, root, tables);
                if (Double.isNaN(one)) {
                    one = r.rowsPerSecond;
                }
                System.out.printf(
                        "| %d | %,.0f | %.2f | %,d | %,.0f | %,.0f | %,.1f | %d |%n",
                        tables,
                        r.rowsPerSecond,
                        r.rowsPerSecond / one,
                        r.generations,
                        r.generations / r.seconds * 60,
                        (double) records / r.generations,
                        r.seals / (double) partitions / r.seconds * 60,
                        r.peakRssMiB);
            }
        }
    }

    private void preload(EmbeddedKafka kafka, ApicurioRegistry registry, int tables) throws Exception {
        ConfluentAvroSerializer<Rollout> serializer = BenchClients.rolloutSerializer(registry);
        String topic = "rollouts-" + tables;
        List<RolloutGenerator> generators = new ArrayList<>();
        for (int t = 0; t < tables; t++) {
            generators.add(new RolloutGenerator(String.format("exp-%03d", t), payloadBytes, 7));
        }
        try (KafkaProducer<byte[], byte[]> producer = BenchClients.bulkProducer(kafka)) {
            for (int i = 0; i < records; i++) {
                Rollout rollout = generators.get(i % tables).rollout(i, 0);
                producer.send(new ProducerRecord<>(
                        topic, rollout.getRecordId().getBytes(), serializer.serialize(topic, rollout)));
            }
            producer.flush();
        }
    }

    /** Rates from the first seal to the last (start-up left out). */
    private record Result(double rowsPerSecond, double seconds, long generations, long seals, long peakRssMiB) {}

    private Result ingest(EmbeddedKafka kafka, ApicurioRegistry registry, Path root, int tables) throws Exception {
        Path work = root.resolve("tables-" + tables);
        Path tablesRoot = work.resolve("tables");
        Files.createDirectories(work);
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        props.put("rollout.tables.root", tablesRoot.toString());
        props.put("rollout.table.route", "${experiment}");
        props.put("rollout.input.topic", "rollouts-" + tables);
        props.put("application.id", "bench-many-" + tables);
        props.put("rollout.state.dir", work.resolve("state").toString());
        props.put("http.port", "0");
        props.put("rollout.seal.max.rows", Integer.toString(sealRows));
        props.put("rollout.seal.max.age.ms", "5000");
        props.put("rollout.max.payload.bytes", Integer.toString(Math.max(1_000_000, payloadBytes * 2)));
        Path config = work.resolve("ingest.properties");
        try (Writer out = Files.newBufferedWriter(config)) {
            props.store(out, null);
        }
        long started = System.nanoTime();
        try (ChildJvm app = ChildJvm.start(
                        IngestApp.class, List.of(config.toString()), Map.of(), work.resolve("ingest.log"), "-Xmx1g");
                TableCatalog catalog = waitForTables(tablesRoot, app, tables)) {
            long peakRss = 0;
            long firstSeal = 0;
            long sealed;
            long generations;
            long seals;
            long sealedAtFirst = 0;
            while (true) {
                // A seal writes a generation per table for the same range: a partition's sealed offsets are the
                // highest generation number (last offset + 1) of any table, its seals the distinct numbers.
                long[] sealedUpTo = new long[partitions];
                List<java.util.Set<Long>> sealsOf = new ArrayList<>();
                for (int p = 0; p < partitions; p++) {
                    sealsOf.add(new java.util.HashSet<>());
                }
                generations = 0;
                for (String name : catalog.names()) {
                    RolloutTable table = catalog.open(name).orElse(null);
                    if (table == null) {
                        continue;
                    }
                    for (int p = 0; p < partitions; p++) {
                        List<Long> numbers = table.generations()
                                .sealedBetween(ShardId.of("rollouts-" + tables, p), 0, Long.MAX_VALUE);
                        generations += numbers.size();
                        for (long number : numbers) {
                            sealedUpTo[p] = Math.max(sealedUpTo[p], number);
                        }
                        sealsOf.get(p).addAll(numbers);
                    }
                }
                sealed = java.util.Arrays.stream(sealedUpTo).sum();
                seals = sealsOf.stream().mapToLong(java.util.Set::size).sum();
                if (firstSeal == 0 && sealed > 0) {
                    firstSeal = System.nanoTime();
                    sealedAtFirst = sealed;
                }
                peakRss = Math.max(peakRss, ProcessMemory.rssMiB(app.pid()));
                if (sealed >= records) {
                    break;
                }
                if (!app.isAlive() || System.nanoTime() - started > 900e9) {
                    throw new IllegalStateException("the ingest app did not seal everything; see " + app.log());
                }
                Thread.sleep(250);
            }
            double seconds = (System.nanoTime() - firstSeal) / 1e9;
            app.stop();
            return new Result(
                    (records - sealedAtFirst) / seconds,
                    seconds,
                    generations,
                    seals,
                    Math.max(peakRss, ProcessMemory.hwmMiB(app.pid())));
        }
    }

    /** The catalog once the app created its first table. */
    private static TableCatalog waitForTables(Path root, ChildJvm app, int tables) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!Files.isDirectory(root) || Files.list(root).findAny().isEmpty()) {
            if (System.nanoTime() > deadline || !app.isAlive()) {
                throw new IllegalStateException("no table created; see " + app.log());
            }
            Thread.sleep(200);
        }
        return TableCatalog.under(
                dev.rolloutingest.table.TableLocation.local(root),
                TableSettings.DEFAULTS,
                new SimpleMeterRegistry(),
                Math.max(tables, 1));
    }
}
