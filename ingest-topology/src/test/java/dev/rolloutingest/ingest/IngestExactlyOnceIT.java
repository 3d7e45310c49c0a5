package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.ListQuery;
import dev.rolloutingest.table.RolloutRow;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.SealedGeneration;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
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
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The core promise, end to end on a real broker, registry and table: the app runs in its own JVM and is
 * SIGKILLed at random points (and once halted right after a generation write, before its commit), then
 * restarted; every produced record_id is readable exactly once with its latest value, and the announced
 * generations tile each partition's offsets with no gap and no overlap.
 */
class IngestExactlyOnceIT {
    private static final Path ROOT = Path.of("target", "it-ingest").toAbsolutePath();
    private static final int PARTITIONS = 3;
    private static EmbeddedKafka kafka;
    private static ApicurioRegistry registry;

    @BeforeAll
    static void services() {
        kafka = EmbeddedKafka.start(ROOT.resolve("kafka-" + UUID.randomUUID()));
        registry = ApicurioRegistry.start(ROOT.resolve("registry"), Duration.ofSeconds(120));
    }

    @AfterAll
    static void stopServices() {
        registry.close();
        kafka.close();
    }

    @Test
    void killedAtRandomPointsEveryRecordLandsExactlyOnceWithItsLatestValue() throws Exception {
        String run = "eo-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String events = run + "-generations";
        String dlq = run + "-dlq";
        kafka.createTopics(List.of(new NewTopic(input, PARTITIONS, (short) 1), new NewTopic(events, 1, (short) 1),
                new NewTopic(dlq, 1, (short) 1)));
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Path config = writeConfig(work, Map.of(
                "rollout.input.topic", input, "rollout.generations.topic", events, "rollout.dlq.topic", dlq,
                "rollout.table.uri", tableDir.toString(), "application.id", run,
                "rollout.state.dir", work.resolve("state").toString()));

        int records = 3_000;
        int keys = 1_100;
        int firstWave = 600;
        Map<String, Long> latestVersion = new TreeMap<>();
        AtomicLong produced = new AtomicLong();
        Path log = work.resolve("ingest.log");

        // A: every record processed and its offset committed, nothing sealed, then SIGKILL. The restart must
        // re-read the buffered records from the topic: Streams already committed their offsets.
        produce(input, 0, firstWave, keys, latestVersion, produced, 0);
        ChildJvm app = ChildJvm.start(IngestApp.class, List.of(config.toString()),
                Map.of("ROLLOUT_SEAL_MAX_ROWS", "1000000", "ROLLOUT_SEAL_MAX_AGE_MS", "3600000"), log);
        awaitCommitted(run, input, 120);
        app.kill();
        // B: a crash right after a generation write, before its event and offsets commit: adopted on restart.
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of("ROLLOUT_FAULT_HALT_AFTER_WRITES", "2"), log);
        assertThat(app.waitFor(120)).as("the fault-injected run halts itself").isEqualTo(137);
        // C: SIGKILLs at random points while producers keep writing.
        Thread producer = new Thread(() -> produce(input, firstWave, records, keys, latestVersion, produced, 150),
                "producer");
        producer.start();
        Random random = new Random(42);
        for (int kill = 0; kill < 3; kill++) {
            app = ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of(), log);
            Thread.sleep(4_000 + random.nextInt(4_000));
            app.kill();
        }
        producer.join(180_000);
        assertThat(produced.get()).isEqualTo(records);
        // D: a clean run to the end.
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of(), log);
        try {
            awaitAllSealed(run, input, tableDir, 180);
        } finally {
            assertThat(app.stop()).isIn(0, 143);
        }

        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, meters)) {
            List<RolloutRow> rows = table.list(ListQuery.all(10_000));
            assertThat(rows).hasSize(keys);
            Map<String, Long> seen = new HashMap<>();
            for (RolloutRow row : rows) {
                assertThat(seen.put(row.recordId(), row.rollout().getPolicyVersion())).as("duplicate " + row.recordId()).isNull();
            }
            assertThat(seen).isEqualTo(latestVersion);

            Map<String, List<GenerationSealed>> announced = readEvents(events);
            for (int p = 0; p < PARTITIONS; p++) {
                String shard = ShardId.of(input, p);
                List<SealedGeneration> sealed = table.pendingGenerations(shard);
                List<GenerationSealed> shardEvents = announced.getOrDefault(shard, List.of());
                // Exactly one event per sealed generation, and the generations tile [0, end) of the partition.
                assertThat(shardEvents).extracting(GenerationSealed::getGeneration)
                        .containsExactlyElementsOf(sealed.stream().map(SealedGeneration::generation).toList());
                long next = 0;
                for (SealedGeneration g : sealed) {
                    assertThat(g.firstOffset()).as("shard %s generation %d starts where the previous ended", shard,
                            g.generation()).isEqualTo(next);
                    next = g.lastOffset() + 1;
                }
            }
            String appLog = Files.readString(log);
            assertThat(appLog).contains("adopting generation");
            assertThat(appLog).containsPattern("re-read [1-9][0-9]* unsealed records");
        }
    }

    private void produce(String topic, int from, int to, int keys, Map<String, Long> latestVersion, AtomicLong produced,
            long pauseEvery50Ms) {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("exp", 256, 11);
        try (KafkaProducer<String, Rollout> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true),
                new StringSerializer(), serializer)) {
            for (int i = from; i < to; i++) {
                Rollout rollout = generator.rollout(i % keys, i);
                producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout)).get();
                synchronized (latestVersion) {
                    latestVersion.put(rollout.getRecordId(), (long) i);
                }
                produced.incrementAndGet();
                if (pauseEvery50Ms > 0 && i % 50 == 0) {
                    Thread.sleep(pauseEvery50Ms); // spread production over the kills
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private Path writeConfig(Path dir, Map<String, String> extra) throws IOException {
        Files.createDirectories(dir);
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        props.put("rollout.seal.max.rows", "60");
        props.put("rollout.seal.max.age.ms", "700");
        props.put("rollout.seal.check.interval.ms", "100");
        props.put("http.port", "0");
        props.put("streams.commit.interval.ms", "200");
        props.putAll(extra);
        Path file = dir.resolve("ingest.properties");
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }

    private void awaitCommitted(String group, String topic, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        try (Admin admin = kafka.admin()) {
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, OffsetSpec> request = new HashMap<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    request.put(new TopicPartition(topic, p), OffsetSpec.latest());
                }
                var ends = admin.listOffsets(request).all().get();
                var committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                if (ends.entrySet().stream().allMatch(e -> committed.get(e.getKey()) != null
                        && committed.get(e.getKey()).offset() >= e.getValue().offset())) {
                    return;
                }
                Thread.sleep(200);
            }
        }
        throw new AssertionError("offsets not committed within " + seconds + " s");
    }

    /** Until the group committed every offset and the table's generations reach each partition's end. */
    private void awaitAllSealed(String group, String topic, Path tableDir, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        try (Admin admin = kafka.admin()) {
            Map<TopicPartition, OffsetSpec> request = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                request.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            var ends = admin.listOffsets(request, new org.apache.kafka.clients.admin.ListOffsetsOptions(
                    IsolationLevel.READ_COMMITTED)).all().get();
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, OffsetAndMetadata> committed =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                boolean done = true;
                try (RolloutTable table = RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS,
                        new SimpleMeterRegistry())) {
                    for (int p = 0; p < PARTITIONS; p++) {
                        TopicPartition tp = new TopicPartition(topic, p);
                        long end = ends.get(tp).offset();
                        OffsetAndMetadata c = committed.get(tp);
                        List<SealedGeneration> sealed = table.pendingGenerations(ShardId.of(topic, p));
                        long sealedEnd = sealed.isEmpty() ? 0 : sealed.get(sealed.size() - 1).lastOffset() + 1;
                        done &= c != null && c.offset() >= end && sealedEnd >= end - 1;
                    }
                }
                if (done) {
                    Thread.sleep(1_000); // let the last transaction's events land
                    return;
                }
                Thread.sleep(500);
            }
        }
        throw new AssertionError("not everything sealed within " + seconds + " s");
    }

    private Map<String, List<GenerationSealed>> readEvents(String topic) {
        ConfluentAvroDeserializer<GenerationSealed> deserializer = new ConfluentAvroDeserializer<>(null, GenerationSealed.class);
        deserializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        Map<String, List<GenerationSealed>> byShard = new HashMap<>();
        try (KafkaConsumer<String, GenerationSealed> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.GROUP_ID_CONFIG, "verify-" + UUID.randomUUID()),
                new StringDeserializer(), deserializer)) {
            consumer.subscribe(List.of(topic));
            long quietSince = System.currentTimeMillis();
            while (System.currentTimeMillis() - quietSince < 3_000) {
                for (ConsumerRecord<String, GenerationSealed> record : consumer.poll(Duration.ofMillis(300))) {
                    byShard.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
                    quietSince = System.currentTimeMillis();
                }
            }
        }
        byShard.values().forEach(list -> list.sort(java.util.Comparator.comparingLong(GenerationSealed::getGeneration)));
        return byShard;
    }
}
