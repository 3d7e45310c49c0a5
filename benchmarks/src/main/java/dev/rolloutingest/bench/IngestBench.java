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
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Ingest against its limits, in one run on the embedded services and the same preloaded records: (a) a
 * plain consumer with the Avro decode, (b) a plain write of the same rows as generation-sized datasets,
 * (c) the two pipelined (consume and decode on one thread, write on another, no exactly-once) = the
 * limit, (d) the ingest topology in its own JVM. Then the topology's produce-to-readable latency at a
 * steady rate. Prints Markdown.
 *
 * <p>Over 300 lines because the topology's runs and the freshness run share the embedded services and the preloaded
 * records (the limits are IngestLimits).
 */
final class IngestBench {
    static final int GENERATION_ROWS = 10_000;

    private final Path dir;
    private final int records;
    private final int partitions;
    private final int payloadBytes;
    private final double freshnessRate;
    private final int freshnessSeconds;
    private final Map<String, String> topologySettings;
    private final boolean limits;

    IngestBench(
            Path dir,
            int records,
            int partitions,
            int payloadBytes,
            double freshnessRate,
            int freshnessSeconds,
            Map<String, String> topologySettings,
            boolean limits) {
        this.topologySettings = topologySettings;
        this.limits = limits;
        this.dir = dir.toAbsolutePath();
        this.records = records;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
        this.freshnessRate = freshnessRate;
        this.freshnessSeconds = freshnessSeconds;
    }

    void run() throws Exception {
        FileTrees.deleteRecursively(dir.resolve("ingest-bench"));
        Path root = dir.resolve("ingest-bench");
        try (EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(root.resolve("registry"), Duration.ofSeconds(120))) {
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", partitions, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1)));
            long bytes = preload(kafka, registry);
            System.out.printf(
                    "%,d rollouts, %d-byte payloads, %d partitions, %.1f MB on the topic; generations of %,d rows%n%n",
                    records, payloadBytes, partitions, bytes / 1e6, GENERATION_ROWS);
            System.out.println("| program | rows/s | MB/s | vs the limit (c) | notes |");
            System.out.println("|---|---|---|---|---|");
            double c = Double.NaN;
            if (limits) {
                IngestLimits limit = new IngestLimits(kafka, registry, records, partitions, payloadBytes);
                double a;
                try (BufferAllocator allocator = new RootAllocator()) {
                    limit.plainConsumer(allocator); // warms the JIT up for all that follows
                    a = limit.plainConsumer(allocator);
                }
                print("(a) plain consumer + decode into Arrow", a, bytes, 0, "one thread, warm");
                double b = limit.plainWrite(root.resolve("plain-write"));
                print("(b) plain table write, 10k-row datasets", b, bytes, 0, "one thread, rows already in Arrow");
                c = limit.pipelined(root.resolve("pipelined"));
                print("(c) consume+decode | write, pipelined = limit", c, bytes, c, "no exactly-once");
            }
            Topology d = topology(kafka, registry, root);
            print(
                    "(d) ingest topology, steady",
                    d.steadyRowsPerSecond,
                    bytes,
                    c,
                    String.format(
                            "start-up %.1f s, first to last seal %.1f s, tail (age trigger) %.1f s, peak RSS %d MiB%s",
                            d.startupSeconds,
                            d.runSeconds,
                            d.tailSeconds,
                            d.peakRssMiB,
                            topologySettings.isEmpty() ? "" : ", " + topologySettings));
            print(
                    "(d) ingest topology, warm",
                    d.warmRowsPerSecond,
                    bytes,
                    c,
                    String.format(
                            "the same run once a third of the records are sealed; its JIT compilers meanwhile %.0f %%"
                                    + " of a core",
                            d.warmJitShare * 100));
            print(
                    "(d) ingest topology, JIT quiet",
                    d.quietRowsPerSecond,
                    bytes,
                    c,
                    Double.isNaN(d.quietRowsPerSecond)
                            ? "its JIT compilers were not quiet before the drain's end: more --records"
                            : String.format(
                                    "the same run from %.1f s after the first seal, once its JIT compilers used under"
                                            + " %.0f %% of a core for %d s, as (c)'s run compiled; meanwhile %.0f %%",
                                    d.quietAfterFirstSealSeconds,
                                    JIT_QUIET_SHARE * 100,
                                    JIT_QUIET_WINDOW_NANOS / 1_000_000_000L,
                                    d.quietJitShare * 100));
            if (limits) {
                System.out.printf(
                        "%n(d)/(c) = %.2f from the first seal, %.2f warm%s%n",
                        d.steadyRowsPerSecond / c,
                        d.warmRowsPerSecond / c,
                        Double.isNaN(d.quietRowsPerSecond)
                                ? ""
                                : String.format(", %.2f JIT quiet", d.quietRowsPerSecond / c));
            }
            if (freshnessRate > 0) {
                freshness(kafka, registry, root);
            }
        }
    }

    private void print(String what, double rowsPerSecond, long bytes, double limit, String notes) {
        if (Double.isNaN(rowsPerSecond)) {
            System.out.printf("| %s | n/a | | | %s |%n", what, notes);
            return;
        }
        System.out.printf(
                "| %s | %,.0f | %.1f | %s | %s |%n",
                what,
                rowsPerSecond,
                rowsPerSecond * bytes / records / 1e6,
                limit > 0 ? String.format("%.2f", rowsPerSecond / limit) : "",
                notes);
    }

    private long preload(EmbeddedKafka kafka, ApicurioRegistry registry) throws Exception {
        ConfluentAvroSerializer<Rollout> serializer = BenchClients.rolloutSerializer(registry);
        RolloutGenerator generator = new RolloutGenerator("bench", payloadBytes, 7);
        long bytes = 0;
        try (KafkaProducer<byte[], byte[]> producer = BenchClients.bulkProducer(kafka)) {
            for (int i = 0; i < records; i++) {
                Rollout rollout = generator.rollout(i, 0);
                byte[] value = serializer.serialize("rollouts", rollout);
                byte[] key = rollout.getRecordId().getBytes();
                bytes += value.length + key.length;
                producer.send(new ProducerRecord<>("rollouts", key, value));
            }
            producer.flush();
        }
        return bytes;
    }

    /**
     * The topology's own JVM compiles Kafka's, Streams', Arrow's and lance-core's code for most of a drain of millions
     * of rows (its compiler threads took a third of its CPU over 1,500,000 rows, a quarter over 3,000,000), where (c)
     * runs in the bench's JVM after (a) compiled the same code twice: "JIT quiet" is the topology measured as (c) is.
     */
    private static final double JIT_QUIET_SHARE = 0.10;

    private static final long JIT_QUIET_WINDOW_NANOS = 2_000_000_000L;

    private record Topology(
            double steadyRowsPerSecond,
            double warmRowsPerSecond,
            double warmJitShare,
            double quietRowsPerSecond,
            double quietAfterFirstSealSeconds,
            double quietJitShare,
            double startupSeconds,
            double runSeconds,
            double tailSeconds,
            long peakRssMiB) {}

    private Topology topology(EmbeddedKafka kafka, ApicurioRegistry registry, Path root) throws Exception {
        Path work = root.resolve("topology");
        Path tableDir = work.resolve("table");
        Path config = writeConfig(work, kafka, registry, tableDir, "bench-ingest", 30_000);
        long started = System.nanoTime();
        try (ChildJvm app = ChildJvm.start(
                IngestApp.class, List.of(config.toString()), Map.of(), work.resolve("ingest.log"), "-Xmx1g")) {
            // Sealed rows over time, from the seals (the table as any reader sees it), and the CPU its JIT compilers
            // used by then.
            List<long[]> samples = new ArrayList<>(); // {nanos, sealed rows, JIT compilers' CPU nanos}
            long peakRss = 0;
            try (RolloutTable table = waitForTable(tableDir, app)) {
                while (true) {
                    long sealed = 0;
                    for (int p = 0; p < partitions; p++) {
                        sealed += table.generations()
                                .sealedRecords(ShardId.of("rollouts", p)); // a listing: light on the CPU
                    }
                    double jit = ThreadCpu.byRole(app.pid()).getOrDefault(ThreadCpu.JIT_COMPILERS, 0.0);
                    samples.add(new long[] {System.nanoTime(), sealed, (long) (jit * 1e9)});
                    peakRss = Math.max(peakRss, ProcessMemory.rssMiB(app.pid()));
                    if (sealed >= records) {
                        break;
                    }
                    if (!app.isAlive() || System.nanoTime() - started > 600e9) {
                        throw new IllegalStateException("the ingest app did not seal everything; see " + app.log());
                    }
                    Thread.sleep(200);
                }
            }
            app.stop();
            long firstSeal = samples.stream().filter(s -> s[1] > 0).findFirst().orElseThrow()[0];
            long full = samples.get(samples.size() - 1)[0];
            // Steady: from the first seal to the last seal that was not the age-triggered tail.
            long steadyRows = records - (long) partitions * GENERATION_ROWS;
            long[] steadyEnd = samples.stream()
                    .filter(s -> s[1] >= steadyRows)
                    .findFirst()
                    .orElse(samples.get(samples.size() - 1));
            long[] steadyStart =
                    samples.stream().filter(s -> s[1] > 0).findFirst().orElseThrow();
            // Warm: the same end, from when a third of the records are sealed (much of the JIT's work done).
            long[] warmStart = samples.stream()
                    .filter(s -> s[1] >= records / 3)
                    .findFirst()
                    .orElse(steadyStart);
            long[] quietStart = jitQuietFrom(samples, steadyStart, steadyEnd);
            return new Topology(
                    rate(steadyStart, steadyEnd),
                    rate(warmStart, steadyEnd),
                    jitShare(warmStart, steadyEnd),
                    quietStart == null ? Double.NaN : rate(quietStart, steadyEnd),
                    quietStart == null ? Double.NaN : (quietStart[0] - firstSeal) / 1e9,
                    quietStart == null ? Double.NaN : jitShare(quietStart, steadyEnd),
                    (firstSeal - started) / 1e9,
                    (full - firstSeal) / 1e9,
                    (full - steadyEnd[0]) / 1e9,
                    Math.max(peakRss, ProcessMemory.hwmMiB(app.pid())));
        }
    }

    /**
     * The first sample from the first seal on whose last {@link #JIT_QUIET_WINDOW_NANOS} the JIT compilers used under
     * {@link #JIT_QUIET_SHARE} of a core, if it leaves at least a quarter of the steady window; else null.
     */
    private static long[] jitQuietFrom(List<long[]> samples, long[] steadyStart, long[] steadyEnd) {
        long latest = steadyEnd[0] - (steadyEnd[0] - steadyStart[0]) / 4;
        int back = 0;
        for (int i = 0; i < samples.size(); i++) {
            long[] sample = samples.get(i);
            if (sample[0] > latest) {
                return null;
            }
            while (back < i && sample[0] - samples.get(back + 1)[0] >= JIT_QUIET_WINDOW_NANOS) {
                back++;
            }
            long[] from = samples.get(back);
            if (sample[0] >= steadyStart[0]
                    && sample[0] - from[0] >= JIT_QUIET_WINDOW_NANOS
                    && jitShare(from, sample) < JIT_QUIET_SHARE) {
                return sample;
            }
        }
        return null;
    }

    /** The JIT compilers' share of a core between two samples. */
    private static double jitShare(long[] from, long[] to) {
        return to[0] > from[0] ? (double) (to[2] - from[2]) / (to[0] - from[0]) : 0;
    }

    /** Rows sealed per second between two samples ({nanos, sealed rows, ...}). */
    private static double rate(long[] from, long[] to) {
        double seconds = (to[0] - from[0]) / 1e9;
        return seconds > 0 ? (to[1] - from[1]) / seconds : 0;
    }

    private RolloutTable waitForTable(Path tableDir, ChildJvm app) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            try {
                return RolloutTable.open(
                        TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry());
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline || !app.isAlive()) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private Path writeConfig(
            Path work, EmbeddedKafka kafka, ApicurioRegistry registry, Path tableDir, String app, long ageMs)
            throws Exception {
        Files.createDirectories(work);
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        props.put("rollout.table.uri", tableDir.toString());
        props.put("application.id", app);
        props.put("rollout.state.dir", work.resolve("state").toString());
        props.put("http.port", "0");
        props.put("rollout.seal.max.rows", Integer.toString(GENERATION_ROWS));
        props.put("rollout.seal.max.age.ms", Long.toString(ageMs));
        props.put("rollout.max.payload.bytes", Integer.toString(Math.max(1_000_000, payloadBytes * 2)));
        props.putAll(topologySettings);
        Path file = work.resolve("ingest.properties");
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }

    /** Produce-to-readable latency at a steady rate: each record's Kafka timestamp to its generation's seal. */
    private void freshness(EmbeddedKafka kafka, ApicurioRegistry registry, Path root) throws Exception {
        Path work = root.resolve("freshness");
        Path tableDir = work.resolve("table");
        String topic = "fresh";
        kafka.createTopics(List.of(new NewTopic(topic, partitions, (short) 1)));
        long ageMs = 5_000;
        Path config = writeConfig(work, kafka, registry, tableDir, "bench-fresh", ageMs);
        Properties props = new Properties();
        try (var in = Files.newBufferedReader(config)) {
            props.load(in);
        }
        props.put("rollout.input.topic", topic);
        try (Writer out = Files.newBufferedWriter(config)) {
            props.store(out, null);
        }
        Map<String, Long> producedAt = new HashMap<>();
        try (ChildJvm app =
                ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of(), work.resolve("ingest.log"))) {
            try (RolloutTable table = waitForTable(tableDir, app)) {
                Thread.sleep(5_000); // RUNNING
                ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
                serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
                RolloutGenerator generator = new RolloutGenerator("fresh", payloadBytes, 9);
                long total = (long) (freshnessRate * freshnessSeconds);
                long started = System.nanoTime();
                try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                        Map.of(
                                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                                kafka.bootstrapServers(),
                                ProducerConfig.LINGER_MS_CONFIG,
                                5),
                        new ByteArraySerializer(),
                        new ByteArraySerializer())) {
                    for (long i = 0; i < total; i++) {
                        Rollout rollout = generator.rollout(i, 0);
                        long now = System.currentTimeMillis();
                        producedAt.put(rollout.getRecordId(), now);
                        producer.send(new ProducerRecord<>(
                                topic,
                                null,
                                now,
                                rollout.getRecordId().getBytes(),
                                serializer.serialize(topic, rollout)));
                        long due = started + (long) ((i + 1) * 1e9 / freshnessRate);
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        }
                    }
                }
                // Every record's latency: its generation's seal time minus its produce time.
                long deadline = System.nanoTime() + (ageMs + 30_000) * 1_000_000L;
                List<Long> latencies = new ArrayList<>();
                while (System.nanoTime() < deadline) {
                    latencies.clear();
                    for (int p = 0; p < partitions; p++) {
                        for (SealedGeneration g : table.generations().pending(ShardId.of(topic, p))) {
                            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                                    Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                                    new ByteArrayDeserializer(),
                                    new ByteArrayDeserializer())) {
                                TopicPartition tp = new TopicPartition(topic, p);
                                consumer.assign(List.of(tp));
                                consumer.seek(tp, g.firstOffset());
                                long read = g.firstOffset();
                                while (read <= g.lastOffset()) {
                                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                                        if (r.offset() <= g.lastOffset()) {
                                            latencies.add(sealFileTime(tableDir, g) - r.timestamp());
                                        }
                                        read = r.offset() + 1;
                                    }
                                }
                            }
                        }
                    }
                    if (latencies.size() >= total) {
                        break;
                    }
                    Thread.sleep(1_000);
                }
                long[] sorted =
                        latencies.stream().mapToLong(Long::longValue).sorted().toArray();
                System.out.printf(
                        "%nfreshness at %,.0f records/s for %d s (rollout.seal.max.age.ms=%d): %,d records,"
                                + " produce-to-readable (seal file written) p50 %.2f s, p99 %.2f s, max %.2f s; readers in other processes see a seal"
                                + " at most rollout.read.refresh.ms (1 s) later%n",
                        freshnessRate,
                        freshnessSeconds,
                        ageMs,
                        sorted.length,
                        sorted[sorted.length / 2] / 1000.0,
                        sorted[(int) Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] / 1000.0,
                        sorted[sorted.length - 1] / 1000.0);
            }
            app.stop();
        }
    }

    /** When the seal file was written: the moment the generation became readable. */
    private static long sealFileTime(Path tableDir, SealedGeneration g) {
        try {
            return Files.getLastModifiedTime(tableDir.resolve(g.sealPath())).toMillis();
        } catch (IOException e) {
            return g.sealedAt().toEpochMilli();
        }
    }
}
