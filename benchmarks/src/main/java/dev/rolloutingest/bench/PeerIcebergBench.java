package dev.rolloutingest.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.launcher.PipelineApp;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.values.RolloutValues;
import dev.rolloutingest.serde.values.ValueFormat;
import java.io.IOException;
import java.io.InputStream;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Stream;
import org.apache.iceberg.IcebergBuild;
import org.apache.iceberg.Table;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.connect.cli.ConnectStandalone;

/**
 * rollout-ingest side by side with Apache Iceberg's Kafka Connect sink, in one run on the embedded broker: the same N
 * rollouts produced once per value format to a topic of their own (a backlog), then drained by each system in turn,
 * every JVM at -Xmx2g. rollout-ingest is the ingest app and the merge-worker (seal age and merge age 5 s, other
 * settings default), in one JVM as {@code rollout-ingest pipeline} runs them (or one each, {@code --processes 2});
 * the sink runs in Kafka Connect standalone (the connect-standalone CLI's main, a worker and a connector file) into an Iceberg table in a Hadoop catalog on local disk, created beforehand with the
 * contract's columns. Per system: rows/s end to end and from 10 % to 90 % of the rows, when the first row and all rows
 * were readable (rollout-ingest: sealed, so readable through the table's reads; Iceberg: committed in a snapshot) and
 * when all were merged into the base, CPU seconds and peak RSS of its JVMs, the table's bytes, and every record_id read
 * back against the produced ones (lost, duplicated). Prints Markdown.
 *
 * <p>Avro: the sink reads Avro only through Confluent's AvroConverter, which the Maven registry here does not serve;
 * the Avro topic is drained by rollout-ingest alone and the sink's row says so.
 *
 * <p>Over 300 lines because both systems' runs share the backlog, the sampling and the report.
 */
final class PeerIcebergBench {
    static final String CONNECTOR = "iceberg-sink";
    static final String CONTROL_TOPIC = "control-iceberg";
    private static final long SAMPLE_MS = 250;
    /** A drain that makes no progress this long is given up: its missing rows show as lost. */
    private static final long STALL_NANOS = 180_000_000_000L;

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private final Path root;
    private final int records;
    private final int partitions;
    private final int payloadBytes;
    private final List<ValueFormat> formats;
    private final Map<String, String> ingestSettings;
    private final Map<String, String> mergeSettings;
    private final int processes;

    /**
     * @param ingestSettings settings of the ingest app beyond the run's own (--set), for trying one against the
     *     defaults on the same records
     * @param mergeSettings the same for the merge-worker (--merge-set)
     * @param processes 1: the ingest app and the merge-worker in one JVM ({@link PipelineApp}); 2: a JVM each
     */
    PeerIcebergBench(
            Path dir,
            int records,
            int partitions,
            int payloadBytes,
            List<ValueFormat> formats,
            Map<String, String> ingestSettings,
            Map<String, String> mergeSettings,
            int processes) {
        if (processes != 1 && processes != 2) {
            throw new IllegalArgumentException("--processes is 1 or 2, not " + processes);
        }
        this.processes = processes;
        for (ValueFormat format : formats) {
            if (format != ValueFormat.JSON && format != ValueFormat.AVRO) {
                throw new IllegalArgumentException("peer-iceberg runs json and avro, not " + format);
            }
        }
        this.root = dir.toAbsolutePath().resolve("peer-iceberg");
        this.records = records;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
        this.formats = formats;
        this.ingestSettings = Map.copyOf(ingestSettings);
        this.mergeSettings = Map.copyOf(mergeSettings);
    }

    /** One system's drain of the backlog; times in seconds from the start of its JVMs, NaN when never reached. */
    private record Outcome(
            String system,
            double endToEnd,
            double steady,
            double steadyCpuMicrosPerRow,
            double firstReadable,
            double allReadable,
            double allMerged,
            double cpuSeconds,
            long peakRssMiB,
            long tableBytes,
            long lost,
            long duplicated,
            String note,
            String steadyThreads) {
        static Outcome notRun(String system, String why) {
            return new Outcome(
                    system,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    Double.NaN,
                    -1,
                    -1,
                    -1,
                    -1,
                    why,
                    "");
        }

        boolean ran() {
            return peakRssMiB >= 0;
        }
    }

    void run() throws Exception {
        FileTrees.deleteRecursively(root);
        try (EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(root.resolve("registry"), Duration.ofSeconds(120))) {
            List<NewTopic> topics = new ArrayList<>();
            for (ValueFormat format : formats) {
                topics.add(new NewTopic(topic(format), partitions, (short) 1));
                topics.add(new NewTopic("generations-" + format, 2, (short) 1));
                topics.add(new NewTopic("merges-" + format, 1, (short) 1));
                topics.add(new NewTopic("dlq-" + format, 1, (short) 1));
            }
            topics.add(new NewTopic(CONTROL_TOPIC, 1, (short) 1)); // the sink's commit channel; no auto-creation
            kafka.createTopics(topics);
            Map<ValueFormat, BitSet> acked = new LinkedHashMap<>();
            Map<ValueFormat, Long> bytes = produce(kafka, registry, acked);
            System.out.printf(
                    "the same %,d rollouts (%d-byte payloads, key = record_id) on a topic of %d partitions per value"
                            + " format, produced before either system starts; each system drains it in turn, every"
                            + " JVM at -Xmx2g%n",
                    records, payloadBytes, partitions);
            System.out.println("- rollout-ingest: the ingest app and the merge-worker, "
                    + (processes == 1 ? "in one JVM (`rollout-ingest pipeline`)" : "each in its own JVM")
                    + "; rollout.value.format per topic, rollout.seal.max.age.ms=5000,"
                    + " rollout.merge.max.pending.age.ms=5000, other settings default"
                    + (ingestSettings.isEmpty() ? "" : "; the ingest app also " + ingestSettings)
                    + (mergeSettings.isEmpty() ? "" : "; the merge-worker also " + mergeSettings));
            System.out.printf(
                    "- Iceberg: iceberg-kafka-connect %s in Kafka Connect %s standalone (the connect-standalone"
                            + " main), JsonConverter schemas.enable=false, Hadoop catalog on local disk, table created"
                            + " beforehand with the contract's columns (Parquet, unpartitioned), tasks.max=2, commit"
                            + " interval 5 s, offset.flush.interval.ms=1000%n",
                    IcebergBuild.version(), kafkaVersion());
            System.out.println("- times in s from the start of the system's JVMs; readable = rollout-ingest sealed"
                    + " (readable through the table's reads), Iceberg committed (a snapshot); merged = in the base"
                    + " (Iceberg: committed); steady = rows/s between the samples (every 250 ms) that first reach 10 %"
                    + " and 90 % of the rows; CPU = user + system of the system's JVMs at its last mark (their"
                    + " start included), CPU 10→90 % = what they used between those two samples, per row landed"
                    + " (rollout-ingest: readable); peak RSS ="
                    + " VmHWM (rollout-ingest: both JVMs added); the broker runs in the bench's JVM, counted for"
                    + " neither");
            System.out.printf(
                    "- payloads: RolloutGenerator's, which repeat one another's bytes (%.1f %% of the 8-byte words"
                            + " of the first 2,000 are distinct): a compressing format (Iceberg's Parquet, zstd) keeps"
                            + " them in fewer bytes than random ones would take; Lance keeps them as written%n",
                    distinctPayloadWords(2_000) * 100);
            for (ValueFormat format : formats) {
                List<Outcome> outcomes = new ArrayList<>();
                outcomes.add(rolloutIngest(kafka, registry, format, acked.get(format)));
                outcomes.add(
                        format == ValueFormat.JSON
                                ? iceberg(kafka, acked.get(format))
                                : Outcome.notRun(
                                        "Iceberg sink",
                                        "n/a (AvroConverter not served): the sink reads Avro only through"
                                                + " Confluent's AvroConverter (io.confluent:kafka-connect-avro-converter),"
                                                + " which is not in the Maven registry this project builds from"));
                report(format, acked.get(format).cardinality(), bytes.get(format), outcomes);
            }
        }
        // The default run leaves ~5 GB (topics, tables): only a failed run keeps it, to look at; the logs stay.
        keepLogs();
        FileTrees.deleteRecursively(root);
    }

    private void keepLogs() throws IOException {
        Path kept = root.resolveSibling("peer-iceberg-logs");
        FileTrees.deleteRecursively(kept);
        Files.createDirectories(kept);
        for (ValueFormat format : formats) {
            for (String app : List.of("ingest", "merge")) {
                Path log = root.resolve("rollout-ingest-" + format).resolve(app + ".log");
                if (Files.exists(log)) {
                    Files.copy(log, kept.resolve(format + "-" + app + ".log"));
                }
            }
        }
        Path connect = root.resolve("iceberg-json").resolve("connect.log");
        if (Files.exists(connect)) {
            Files.copy(connect, kept.resolve("json-connect.log"));
        }
        System.out.println("\nthe apps' and Connect's logs are kept in " + kept);
    }

    /** Distinct 8-byte words over the first {@code count} payloads, as a share of all their words. */
    private double distinctPayloadWords(int count) {
        RolloutGenerator generator = new RolloutGenerator("peer", payloadBytes, 13);
        Set<Long> distinct = new HashSet<>();
        long words = 0;
        for (int i = 0; i < count; i++) {
            ByteBuffer payload = generator.rollout(i, 0).getBinaryPayload();
            for (int at = 0; payload != null && at + 8 <= payload.limit(); at += 8) {
                distinct.add(payload.getLong(at));
                words++;
            }
        }
        return words == 0 ? 1 : (double) distinct.size() / words;
    }

    private static String topic(ValueFormat format) {
        return "rollouts-" + format;
    }

    /** Produces the backlog: each rollout once per format; notes every acknowledged index. Bytes per format. */
    private Map<ValueFormat, Long> produce(
            EmbeddedKafka kafka, ApicurioRegistry registry, Map<ValueFormat, BitSet> acked) throws Exception {
        ConfluentAvroSerializer<Rollout> avro = BenchClients.rolloutSerializer(registry);
        RolloutGenerator generator = new RolloutGenerator("peer", payloadBytes, 13);
        Map<ValueFormat, Long> bytes = new LinkedHashMap<>();
        for (ValueFormat format : formats) {
            acked.put(format, new BitSet(records));
            bytes.put(format, 0L);
        }
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = BenchClients.bulkProducer(kafka)) {
            for (int i = 0; i < records; i++) {
                Rollout rollout = generator.rollout(i, 0);
                byte[] key = rollout.getRecordId().getBytes(StandardCharsets.UTF_8);
                for (ValueFormat format : formats) {
                    byte[] value = format == ValueFormat.JSON
                            ? RolloutValues.json(rollout)
                            : avro.serialize(topic(format), rollout);
                    bytes.merge(format, (long) value.length, Long::sum);
                    BitSet ok = acked.get(format);
                    int index = i;
                    producer.send(new ProducerRecord<>(topic(format), key, value), (metadata, error) -> {
                        if (error == null) {
                            synchronized (ok) {
                                ok.set(index);
                            }
                        }
                    });
                }
            }
            producer.flush();
        }
        for (ValueFormat format : formats) {
            BitSet ok = acked.get(format);
            synchronized (ok) {
                if (ok.cardinality() != records) {
                    throw new IllegalStateException(
                            (records - ok.cardinality()) + " " + format + " records were not acknowledged");
                }
            }
        }
        System.out.printf("backlog produced in %.1f s%n%n", (System.nanoTime() - started) / 1e9);
        return bytes;
    }

    /** Rows over time, sampled: {nanos, rows, CPU µs the system's JVMs had used, CPU µs of one of them}. */
    private static final class Curve {
        private final long start;
        private final List<long[]> samples = new ArrayList<>();
        private final List<Map<String, Double>> threads = new ArrayList<>();

        Curve(long start) {
            this.start = start;
        }

        /** @param threadCpu the system's CPU seconds by thread role ({@link ThreadCpu}) */
        void add(long nanos, long rows, double cpuSeconds, double oneJvmCpuSeconds, Map<String, Double> threadCpu) {
            samples.add(new long[] {nanos, rows, (long) (cpuSeconds * 1e6), (long) (oneJvmCpuSeconds * 1e6)});
            threads.add(threadCpu);
        }

        /** What the system's threads used between the samples that first reach 10 % and 90 %, by role. */
        String steadyThreads(long total) {
            long[][] window = steadyWindow(total);
            return window == null
                    ? "n/a"
                    : ThreadCpu.between(
                            threads.get(samples.indexOf(window[0])), threads.get(samples.indexOf(window[1])), 5);
        }

        long last() {
            return samples.isEmpty() ? 0 : samples.get(samples.size() - 1)[1];
        }

        private long[] reaching(long rows) {
            return samples.stream().filter(s -> s[1] >= rows).findFirst().orElse(null);
        }

        /** Seconds from the start to the first sample holding {@code rows}; NaN if none did. */
        double secondsTo(long rows) {
            long[] s = reaching(rows);
            return s == null ? Double.NaN : (s[0] - start) / 1e9;
        }

        /** Rows/s between the samples that first reach 10 % and 90 % of {@code total}; NaN if they are one. */
        double steady(long total) {
            long[][] window = steadyWindow(total);
            return window == null ? Double.NaN : (window[1][1] - window[0][1]) / ((window[1][0] - window[0][0]) / 1e9);
        }

        /** The samples that first reach 10 % and 90 % of {@code total}; null unless both exist and are apart in time. */
        private long[][] steadyWindow(long total) {
            long[] from = reaching((total + 9) / 10);
            long[] to = reaching((total * 9 + 9) / 10);
            return from == null || to == null || to[0] == from[0] ? null : new long[][] {from, to};
        }

        /** CPU µs per row between the samples that first reach 10 % and 90 % of {@code total}: landing, not starting. */
        double steadyCpuMicrosPerRow(long total) {
            return steadyCpu(total, 2);
        }

        /** {@link #steadyCpuMicrosPerRow} of the one JVM sampled apart. */
        double steadyOneJvmCpuMicrosPerRow(long total) {
            return steadyCpu(total, 3);
        }

        private double steadyCpu(long total, int column) {
            long[] from = reaching((total + 9) / 10);
            long[] to = reaching((total * 9 + 9) / 10);
            if (from == null || to == null || to[1] == from[1]) {
                return Double.NaN;
            }
            return (double) (to[column] - from[column]) / (to[1] - from[1]);
        }
    }

    private static Map<String, String> with(Map<String, String> own, Map<String, String> settings) {
        Map<String, String> all = new LinkedHashMap<>(own);
        all.putAll(settings);
        return all;
    }

    private Outcome rolloutIngest(EmbeddedKafka kafka, ApicurioRegistry registry, ValueFormat format, BitSet acked)
            throws Exception {
        SustainedRig rig = new SustainedRig(root.resolve("rollout-ingest-" + format), 0, partitions, payloadBytes, 0);
        Path tableDir = rig.dir().resolve("table");
        int mergePort = FreePorts.next();
        Path ingestConfig = rig.config(
                "ingest",
                kafka,
                registry,
                tableDir,
                FreePorts.next(),
                with(
                        Map.of(
                                "application.id",
                                "peer-ingest-" + format,
                                "rollout.input.topic",
                                topic(format),
                                "rollout.value.format",
                                format.setting(),
                                "rollout.generations.topic",
                                "generations-" + format,
                                "rollout.dlq.topic",
                                "dlq-" + format,
                                "rollout.seal.max.age.ms",
                                "5000"),
                        ingestSettings));
        Path mergeConfig = rig.config(
                "merge",
                kafka,
                registry,
                tableDir,
                mergePort,
                with(
                        Map.of(
                                "application.id", "peer-merge-" + format,
                                "rollout.generations.topic", "generations-" + format,
                                "rollout.merges.topic", "merges-" + format,
                                "rollout.merge.max.pending.age.ms", "5000"),
                        mergeSettings));
        long expected = acked.cardinality();
        long start = System.nanoTime();
        Curve readable = new Curve(start);
        Curve merged = new Curve(start);
        double ingestCpu;
        double mergeCpu;
        long ingestRss;
        long mergeRss;
        // one process: both names are the one JVM, whose CPU and memory are counted once
        try (ChildJvm ingest = processes == 1
                        ? ChildJvm.start(
                                PipelineApp.class,
                                List.of(ingestConfig.toString(), mergeConfig.toString()),
                                Map.of(),
                                rig.dir().resolve("ingest.log"),
                                "-Xmx2g")
                        : ChildJvm.start(
                                IngestApp.class,
                                List.of(ingestConfig.toString()),
                                Map.of(),
                                rig.dir().resolve("ingest.log"),
                                "-Xmx2g");
                ChildJvm merge = processes == 1
                        ? ingest
                        : ChildJvm.start(
                                MergeApp.class,
                                List.of(mergeConfig.toString()),
                                Map.of(),
                                rig.dir().resolve("merge.log"),
                                "-Xmx2g")) {
            try (SustainedTarget table = rig.target(tableDir, ingest, mergePort)) {
                long seen = 0;
                long progressAt = System.nanoTime();
                while (true) {
                    long now = System.nanoTime();
                    long base = table.baseRows();
                    // Sealed generations are listed until GC deletes the merged ones; what is in the base is
                    // readable too.
                    long sealed = Math.max(seen, Math.max(table.sealed(), base));
                    if (sealed > readable.last() || base > merged.last()) {
                        progressAt = now;
                    }
                    seen = sealed;
                    double mergeCpuNow = processes == 1 ? 0 : ProcessCpu.seconds(merge.pid());
                    double cpu = ProcessCpu.seconds(ingest.pid()) + mergeCpuNow;
                    Map<String, Double> threads = processes == 1
                            ? ThreadCpu.byRole(ingest.pid())
                            : ThreadCpu.byRole(ingest.pid(), merge.pid());
                    readable.add(now, sealed, cpu, mergeCpuNow, threads);
                    merged.add(now, base, cpu, mergeCpuNow, threads);
                    if (base >= expected) {
                        break;
                    }
                    if (!ingest.isAlive() || !merge.isAlive()) {
                        throw new IllegalStateException("an app of rollout-ingest died; see " + rig.dir());
                    }
                    if (now - progressAt > STALL_NANOS) {
                        System.out.printf(
                                "rollout-ingest %s: no progress for %d s at %,d readable, %,d merged: given up%n",
                                format, STALL_NANOS / 1_000_000_000L, sealed, base);
                        break;
                    }
                    Thread.sleep(SAMPLE_MS);
                }
            }
            ingestCpu = ProcessCpu.seconds(ingest.pid());
            mergeCpu = processes == 1 ? 0 : ProcessCpu.seconds(merge.pid());
            ingestRss = ProcessMemory.hwmMiB(ingest.pid());
            mergeRss = processes == 1 ? 0 : ProcessMemory.hwmMiB(merge.pid());
            ingest.stop();
            if (processes == 2) {
                merge.stop();
            }
        }
        ExactlyOnceAudit.Tally tally = new ExactlyOnceAudit.Tally(acked);
        SustainedTarget.readIds(tableDir, "default", (name, id) -> tally.add(id));
        long tableBytes = bytesUnder(tableDir);
        long generationBytes = bytesUnder(tableDir.resolve("_mem_wal"));
        double allReadable = readable.secondsTo(expected);
        return new Outcome(
                "rollout-ingest",
                expected / allReadable,
                readable.steady(expected),
                readable.steadyCpuMicrosPerRow(expected),
                readable.secondsTo(1),
                allReadable,
                merged.secondsTo(expected),
                ingestCpu + mergeCpu,
                ingestRss + mergeRss,
                tableBytes,
                tally.lost(),
                tally.duplicated(),
                processes == 1
                        ? String.format(
                                "rollout-ingest, one process (`rollout-ingest pipeline`): steady into the base %s rows/s"
                                        + " (10→90 %% of the rows merged); CPU %.1f s; peak RSS %,d MiB; table %.1f MB ="
                                        + " base %.1f MB + sealed generations %.1f MB (merged ones stay until GC,"
                                        + " rollout.gc.interval.ms 300 s)",
                                number(merged.steady(expected)),
                                ingestCpu,
                                ingestRss,
                                tableBytes / 1e6,
                                (tableBytes - generationBytes) / 1e6,
                                generationBytes / 1e6)
                        : String.format(
                                "rollout-ingest: steady into the base %s rows/s (10→90 %% of the rows merged); CPU 10→90 %%"
                                        + " ingest %s + merge-worker %s µs/row; CPU ingest %.1f s + merge-worker %.1f s;"
                                        + " peak RSS ingest %,d MiB + merge-worker"
                                        + " %,d MiB; table %.1f MB = base %.1f MB + sealed generations %.1f MB (merged ones"
                                        + " stay until GC, rollout.gc.interval.ms 300 s)",
                                number(merged.steady(expected)),
                                number(readable.steadyCpuMicrosPerRow(expected)
                                        - readable.steadyOneJvmCpuMicrosPerRow(expected)),
                                number(readable.steadyOneJvmCpuMicrosPerRow(expected)),
                                ingestCpu,
                                mergeCpu,
                                ingestRss,
                                mergeRss,
                                tableBytes / 1e6,
                                (tableBytes - generationBytes) / 1e6,
                                generationBytes / 1e6),
                readable.steadyThreads(expected));
    }

    private Outcome iceberg(EmbeddedKafka kafka, BitSet acked) throws Exception {
        ValueFormat format = ValueFormat.JSON;
        Path work = root.resolve("iceberg-" + format);
        Path warehouse = work.resolve("warehouse");
        Files.createDirectories(work);
        int restPort = FreePorts.next();
        Properties worker = new Properties();
        worker.put("bootstrap.servers", kafka.bootstrapServers());
        worker.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        worker.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
        worker.put("value.converter.schemas.enable", "false");
        worker.put(
                "offset.storage.file.filename", work.resolve("connect.offsets").toString());
        // The sink answers a commit request only from put()/flush(); on a drained topic Connect calls put() when its
        // poll times out, at the next offset flush: a long interval would be latency.
        worker.put("offset.flush.interval.ms", "1000");
        worker.put("listeners", "http://127.0.0.1:" + restPort);
        // the sink's jar lists its connector for ServiceLoader: no reflective scan of the bench's classpath
        worker.put("plugin.discovery", "service_load");
        Properties connector = new Properties();
        connector.put("name", CONNECTOR);
        connector.put("connector.class", "org.apache.iceberg.connect.IcebergSinkConnector");
        connector.put("tasks.max", "2");
        connector.put("topics", topic(format));
        connector.put("iceberg.tables", IcebergRollouts.TABLE.toString());
        connector.put("iceberg.catalog.type", "hadoop");
        connector.put("iceberg.catalog.warehouse", IcebergRollouts.warehouseUri(warehouse));
        connector.put("iceberg.control.topic", CONTROL_TOPIC);
        connector.put("iceberg.control.commit.interval-ms", "5000");
        // The sink finds the worker's Kafka settings by parsing the launch command; say them here too.
        connector.put("iceberg.kafka.bootstrap.servers", kafka.bootstrapServers());
        connector.put("iceberg.tables.auto-create-enabled", "false");
        connector.put("iceberg.tables.evolve-schema-enabled", "false");
        Path workerFile = store(worker, work.resolve("worker.properties"));
        Path connectorFile = store(connector, work.resolve(CONNECTOR + ".properties"));
        long expected = acked.cardinality();
        try (HadoopCatalog catalog = IcebergRollouts.catalog(warehouse)) {
            Table table = IcebergRollouts.create(catalog);
            long start = System.nanoTime();
            Curve committed = new Curve(start);
            double cpu;
            long rss;
            try (ChildJvm connect = ChildJvm.start(
                    ConnectStandalone.class,
                    List.of(workerFile.toString(), connectorFile.toString()),
                    Map.of(),
                    work.resolve("connect.log"),
                    "-Xmx2g")) {
                long progressAt = System.nanoTime();
                for (int sample = 0; ; sample++) {
                    long now = System.nanoTime();
                    long rows = committed.last();
                    try {
                        rows = IcebergRollouts.committedRows(table);
                    } catch (RuntimeException e) {
                        // a commit's metadata mid-rename: the next sample reads it
                    }
                    if (rows > committed.last()) {
                        progressAt = now;
                    }
                    double connectCpu = ProcessCpu.seconds(connect.pid());
                    committed.add(now, rows, connectCpu, connectCpu, ThreadCpu.byRole(connect.pid()));
                    if (rows >= expected) {
                        break;
                    }
                    if (!connect.isAlive()) {
                        throw new IllegalStateException("Kafka Connect died; see " + connect.log());
                    }
                    if (sample % 8 == 0) {
                        failIfFailed(restPort, connect);
                    }
                    if (now - progressAt > STALL_NANOS) {
                        System.out.printf(
                                "Iceberg sink: no commit for %d s at %,d rows: given up%n",
                                STALL_NANOS / 1_000_000_000L, rows);
                        break;
                    }
                    Thread.sleep(SAMPLE_MS);
                }
                cpu = ProcessCpu.seconds(connect.pid());
                rss = ProcessMemory.hwmMiB(connect.pid());
                connect.stop();
            }
            table.refresh();
            ExactlyOnceAudit.Tally tally = new ExactlyOnceAudit.Tally(acked);
            IcebergRollouts.readIds(table, tally::add);
            long tableBytes = bytesUnder(Path.of(URI.create(table.location())));
            double allCommitted = committed.secondsTo(expected);
            return new Outcome(
                    "Iceberg sink",
                    expected / allCommitted,
                    committed.steady(expected),
                    committed.steadyCpuMicrosPerRow(expected),
                    committed.secondsTo(1),
                    allCommitted,
                    allCommitted,
                    cpu,
                    rss,
                    tableBytes,
                    tally.lost(),
                    tally.duplicated(),
                    String.format(
                            "Iceberg: %d snapshots, %s data files; table bytes include its metadata and the .crc"
                                    + " files Hadoop's local file system writes beside each file",
                            IcebergRollouts.snapshots(table),
                            table.currentSnapshot() == null
                                    ? "0"
                                    : table.currentSnapshot().summary().get("total-data-files")),
                    committed.steadyThreads(expected));
        }
    }

    /** Throws with Connect's trace when the connector or a task of it FAILED (its REST status). */
    private static void failIfFailed(int restPort, ChildJvm connect) throws InterruptedException {
        HttpResponse<String> response;
        try {
            response = HTTP.send(
                    HttpRequest.newBuilder(
                                    URI.create("http://127.0.0.1:" + restPort + "/connectors/" + CONNECTOR + "/status"))
                            .timeout(Duration.ofSeconds(5))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (IOException notUpYet) {
            return;
        }
        if (response.statusCode() != 200) {
            return;
        }
        try {
            JsonNode status = new ObjectMapper().readTree(response.body());
            List<JsonNode> states = new ArrayList<>();
            states.add(status.path("connector"));
            status.path("tasks").forEach(states::add);
            for (JsonNode state : states) {
                if ("FAILED".equals(state.path("state").asText())) {
                    throw new IllegalStateException("the Iceberg sink FAILED (see " + connect.log() + "):\n"
                            + state.path("trace").asText());
                }
            }
        } catch (IOException e) {
            // not JSON yet
        }
    }

    private void report(ValueFormat format, long rows, long bytes, List<Outcome> outcomes) {
        System.out.printf(
                "%n### %s: %,d rollouts, %,d bytes a value on average (%.1f MB on the topic)%n%n",
                format, rows, bytes / Math.max(1, rows), bytes / 1e6);
        System.out.println("| system | end-to-end rows/s | steady 10→90 % rows/s | first readable row (s) |"
                + " all readable (s) | all merged (s) | CPU s | CPU µs/row | CPU µs/row 10→90 % | peak RSS MiB |"
                + " table bytes | lost | duplicated |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (Outcome o : outcomes) {
            if (!o.ran()) {
                System.out.printf(
                        "| %s | %s | | | | | | | | | | | |%n",
                        o.system(), o.note().replaceFirst(":.*", ""));
                continue;
            }
            System.out.printf(
                    "| %s | %s | %s | %s | %s | %s | %.1f | %,.0f | %s | %,d | %.1f MB | %d | %d |%n",
                    o.system(),
                    number(o.endToEnd()),
                    number(o.steady()),
                    seconds(o.firstReadable()),
                    seconds(o.allReadable()),
                    seconds(o.allMerged()),
                    o.cpuSeconds(),
                    o.cpuSeconds() * 1e6 / rows,
                    number(o.steadyCpuMicrosPerRow()),
                    o.peakRssMiB(),
                    o.tableBytes() / 1e6,
                    o.lost(),
                    o.duplicated());
        }
        Outcome ours = outcomes.get(0);
        Outcome peer = outcomes.get(1);
        System.out.println();
        if (peer.ran()) {
            System.out.printf(
                    "rollout-ingest / Iceberg: steady %s, end-to-end %s (to all readable), %s (rollout-ingest to all"
                            + " merged); CPU per row %s, %s between 10 %% and 90 %%%n",
                    ratio(ours.steady(), peer.steady()),
                    ratio(ours.endToEnd(), peer.endToEnd()),
                    ratio(rows / ours.allMerged(), peer.endToEnd()),
                    ratio(ours.cpuSeconds(), peer.cpuSeconds()),
                    ratio(ours.steadyCpuMicrosPerRow(), peer.steadyCpuMicrosPerRow()));
        }
        for (Outcome o : outcomes) {
            System.out.println("- " + o.note());
        }
        for (Outcome o : outcomes) {
            if (o.ran()) {
                System.out.printf(
                        "- %s, CPU between the 10 %% and 90 %% samples by thread: %s%n", o.system(), o.steadyThreads());
            }
        }
        if (peer.ran() && Double.isNaN(peer.steady())) {
            System.out.println("- Iceberg's steady rate is n/a: one commit took the table past both 10 % and 90 %");
        }
    }

    private static String number(double v) {
        return Double.isNaN(v) || Double.isInfinite(v) ? "n/a" : String.format("%,.0f", v);
    }

    private static String seconds(double v) {
        return Double.isNaN(v) ? "n/a" : String.format("%.1f", v);
    }

    private static String ratio(double a, double b) {
        double r = a / b;
        return Double.isNaN(r) || Double.isInfinite(r) ? "n/a" : String.format("%.2f", r);
    }

    /** What du -sb says of a directory: the bytes of every file under it. */
    private static long bytesUnder(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return 0;
        }
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile)
                    .mapToLong(p -> {
                        try {
                            return Files.size(p);
                        } catch (IOException gone) {
                            return 0;
                        }
                    })
                    .sum();
        }
    }

    private static Path store(Properties props, Path file) throws IOException {
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }

    /** The Kafka (and so Connect) version on the classpath, from kafka-clients' own properties. */
    private static String kafkaVersion() {
        try (InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties props = new Properties();
            if (in != null) {
                props.load(in);
            }
            return props.getProperty("version", "?");
        } catch (IOException e) {
            return "?";
        }
    }
}
