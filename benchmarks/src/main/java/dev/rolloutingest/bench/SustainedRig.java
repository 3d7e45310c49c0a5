package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * What the sustained, capacity and merge-instances runs share: their scratch directory (the suite's {@code
 * sustained} folder), length, partitions, payload and table count, and the steps each takes on the embedded services:
 * topics, the apps' settings files, the unthrottled producer, the table or tables it reads.
 *
 * @param dir the run's scratch directory, emptied at its start
 * @param tables 0: one table; otherwise records of this many experiments routed to a table each under a root
 */
record SustainedRig(Path dir, int seconds, int partitions, int payloadBytes, int tables) {
    static final String TOPIC = "rollouts";

    /** The rig of a suite whose scratch directory is {@code scratch}: it runs in the {@code sustained} folder of it. */
    static SustainedRig under(Path scratch, int seconds, int partitions, int payloadBytes, int tables) {
        return new SustainedRig(
                scratch.toAbsolutePath().resolve("sustained"), seconds, partitions, payloadBytes, tables);
    }

    /** The experiment, and so the table, of record {@code index} in a many-tables run. */
    static String experimentOf(int index, int tables) {
        return String.format("exp-%03d", index % tables);
    }

    /** What the run reads of its table or tables, once {@code app} has created them. */
    SustainedTarget target(Path tableDir, ChildJvm app, int mergePort) throws Exception {
        return tables == 0
                ? new OneTableTarget(awaitTable(tableDir, app), tableDir, partitions)
                : new ManyTablesTarget(tableDir, mergePort, partitions, tables);
    }

    void createTopics(EmbeddedKafka kafka) {
        createTopics(kafka, 2);
    }

    void createTopics(EmbeddedKafka kafka, int generationPartitions) {
        kafka.createTopics(List.of(
                new NewTopic(TOPIC, partitions, (short) 1),
                new NewTopic("rollout-generations", generationPartitions, (short) 1),
                new NewTopic("rollout-merges", 1, (short) 1),
                new NewTopic("rollouts-dlq", 1, (short) 1)));
    }

    /** Sends rollouts as fast as the broker takes them while {@code producing}, noting each acknowledged index. */
    void produce(
            EmbeddedKafka kafka,
            ApicurioRegistry registry,
            AtomicBoolean producing,
            BitSet acked,
            AtomicLong produced) {
        produce(kafka, registry, producing, acked, produced, 0);
    }

    /**
     * {@link #produce}, each rollout sent again {@code rescoreAfterMs} later (0 = never) with another version of its
     * values (another reward), as a scorer does: the same record_id, an update of the row.
     */
    void produce(
            EmbeddedKafka kafka,
            ApicurioRegistry registry,
            AtomicBoolean producing,
            BitSet acked,
            AtomicLong produced,
            long rescoreAfterMs) {
        ConfluentAvroSerializer<Rollout> serializer = BenchClients.rolloutSerializer(registry);
        RolloutGenerator generator = new RolloutGenerator("sus", payloadBytes, 11);
        ArrayDeque<long[]> rescores = new ArrayDeque<>(); // {due nanos, index}, due ascending
        try (KafkaProducer<byte[], byte[]> producer = BenchClients.bulkProducer(kafka)) {
            for (int i = 0; producing.get(); i++) {
                long now = System.nanoTime();
                while (!rescores.isEmpty() && rescores.peekFirst()[0] <= now) {
                    send(producer, serializer, generator, (int) rescores.pollFirst()[1], 1, acked);
                    produced.incrementAndGet();
                }
                send(producer, serializer, generator, i, 0, acked);
                produced.incrementAndGet();
                if (rescoreAfterMs > 0) {
                    rescores.addLast(new long[] {now + rescoreAfterMs * 1_000_000L, i});
                }
            }
            producer.flush();
        }
    }

    private void send(
            KafkaProducer<byte[], byte[]> producer,
            ConfluentAvroSerializer<Rollout> serializer,
            RolloutGenerator generator,
            int index,
            int version,
            BitSet acked) {
        Rollout rollout = generator.rollout(index, version);
        if (tables > 0) {
            rollout.setExperiment(experimentOf(index, tables));
        }
        producer.send(
                new ProducerRecord<>(
                        TOPIC,
                        rollout.getRecordId().getBytes(StandardCharsets.UTF_8),
                        serializer.serialize(TOPIC, rollout)),
                (metadata, error) -> {
                    if (error == null) {
                        synchronized (acked) {
                            acked.set(index);
                        }
                    }
                });
    }

    /** The one table, once the ingest app created it. */
    RolloutTable awaitTable(Path tableDir, ChildJvm app) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            try {
                return RolloutTable.open(
                        TableLocation.local(tableDir),
                        TableSettings.DEFAULTS
                                .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                                .with(TableSettings.PENDING_MAX_GENERATIONS, 0),
                        new SimpleMeterRegistry());
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline || !app.isAlive()) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    /** The settings file of one app of the run (ingest, merge, ...), in a work directory of its own. */
    Path config(String app, EmbeddedKafka kafka, ApicurioRegistry registry, Path tableDir, int port) throws Exception {
        return config(app, kafka, registry, tableDir, port, Map.of());
    }

    Path config(
            String app,
            EmbeddedKafka kafka,
            ApicurioRegistry registry,
            Path tableDir,
            int port,
            Map<String, String> overrides)
            throws Exception {
        Path work = dir.resolve(app);
        Files.createDirectories(work);
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        if (tables == 0) {
            props.put("rollout.table.uri", tableDir.toString());
        } else {
            props.put("rollout.tables.root", tableDir.toString());
            props.put("rollout.tables.max", Integer.toString(tables));
            if (app.equals("ingest")) {
                props.put("rollout.table.route", "${experiment}");
            }
        }
        props.put("rollout.state.dir", work.resolve("state").toString());
        props.put("http.port", Integer.toString(port));
        props.putAll(overrides);
        Path file = work.resolve(app + ".properties");
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }
}
