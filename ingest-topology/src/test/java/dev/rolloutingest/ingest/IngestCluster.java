package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
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
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
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
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** A real broker and registry for the ingest ITs, with the producer and the checks they share. */
final class IngestCluster implements AutoCloseable {
    final EmbeddedKafka kafka;
    final ApicurioRegistry registry;

    IngestCluster(Path root) {
        this.kafka = EmbeddedKafka.start(root.resolve("kafka-" + UUID.randomUUID()));
        this.registry = ApicurioRegistry.start(root.resolve("registry"), Duration.ofSeconds(120));
    }

    @Override
    public void close() {
        registry.close();
        kafka.close();
    }

    /** A test run's own topics: {@code input} with its partitions, {@code <run>-generations} and {@code <run>-dlq}. */
    void createRunTopics(String run, String input, int partitions) {
        kafka.createTopics(List.of(
                new NewTopic(input, partitions, (short) 1),
                new NewTopic(run + "-generations", 1, (short) 1),
                new NewTopic(run + "-dlq", 1, (short) 1)));
    }

    /**
     * The ingest app's settings for a run: this cluster, the run's topics, its table in {@code work/table} and state
     * in {@code work/state}, an HTTP port of its own. Mutable: a test adds its seal settings.
     */
    Map<String, Object> appProps(String run, String input, Path work) {
        return new HashMap<>(Map.of(
                "bootstrap.servers",
                kafka.bootstrapServers(),
                "schema.registry.url",
                registry.confluentUrl(),
                "rollout.table.uri",
                work.resolve("table").toString(),
                "application.id",
                run,
                "rollout.input.topic",
                input,
                "rollout.generations.topic",
                run + "-generations",
                "rollout.dlq.topic",
                run + "-dlq",
                "rollout.state.dir",
                work.resolve("state").toString(),
                "http.port",
                "0"));
    }

    /** GET /health of an app. */
    static java.net.http.HttpResponse<String> health(IngestApp app) throws Exception {
        return HTTP.send(
                java.net.http.HttpRequest.newBuilder(
                                java.net.URI.create(app.http().baseUrl() + "/health"))
                        .build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
    }

    private static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newHttpClient();

    void produce(
            String topic,
            int from,
            int to,
            int keys,
            Map<String, Long> latestVersion,
            AtomicLong produced,
            long pauseEvery50Ms) {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("exp", 256, 11);
        try (KafkaProducer<String, Rollout> producer = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                        true),
                new StringSerializer(),
                serializer)) {
            for (int i = from; i < to; i++) {
                Rollout rollout = generator.rollout(i % keys, i);
                producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout))
                        .get();
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

    /** As fast as the broker takes them: sends without waiting, then waits for every acknowledgement. */
    void produceUnthrottled(
            String topic, int from, int to, int keys, Map<String, Long> latestVersion, AtomicLong produced) {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("exp", 256, 11);
        List<java.util.concurrent.Future<?>> sends = new java.util.ArrayList<>();
        try (KafkaProducer<String, Rollout> producer = new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.LINGER_MS_CONFIG,
                        10,
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                        true),
                new StringSerializer(),
                serializer)) {
            for (int i = from; i < to; i++) {
                Rollout rollout = generator.rollout(i % keys, i);
                sends.add(producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout)));
                synchronized (latestVersion) {
                    latestVersion.put(rollout.getRecordId(), (long) i);
                }
            }
            producer.flush();
            for (var send : sends) {
                send.get();
                produced.incrementAndGet();
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    Path writeConfig(Path dir, Map<String, String> extra) throws IOException {
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

    void awaitCommitted(String group, String topic, int partitions, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        try (Admin admin = kafka.admin()) {
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, OffsetSpec> request = new HashMap<>();
                for (int p = 0; p < partitions; p++) {
                    request.put(new TopicPartition(topic, p), OffsetSpec.latest());
                }
                var ends = admin.listOffsets(request).all().get();
                var committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata()
                        .get();
                if (ends.entrySet().stream()
                        .allMatch(e -> committed.get(e.getKey()) != null
                                && committed.get(e.getKey()).offset()
                                        >= e.getValue().offset())) {
                    return;
                }
                Thread.sleep(200);
            }
        }
        throw new AssertionError("offsets not committed within " + seconds + " s");
    }

    /**
     * Until the group committed every offset, the table's generations reach each partition's end, and so do the
     * committed events announcing them on {@code eventsTopic} (with them, the dead letters of their ranges).
     */
    void awaitAllSealed(String group, String topic, int partitions, Path tableDir, String eventsTopic, int seconds)
            throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        try (Admin admin = kafka.admin()) {
            Map<TopicPartition, OffsetSpec> request = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                request.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            var ends = admin.listOffsets(
                            request,
                            new org.apache.kafka.clients.admin.ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                    .all()
                    .get();
            while (System.currentTimeMillis() < deadline) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata()
                        .get();
                boolean done = true;
                try (RolloutTable table = RolloutTable.open(
                        TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                    for (int p = 0; p < partitions; p++) {
                        TopicPartition tp = new TopicPartition(topic, p);
                        long end = ends.get(tp).offset();
                        OffsetAndMetadata c = committed.get(tp);
                        List<SealedGeneration> sealed = table.pendingGenerations(ShardId.of(topic, p));
                        long sealedEnd = sealed.isEmpty()
                                ? 0
                                : sealed.get(sealed.size() - 1).lastOffset() + 1;
                        done &= c != null && c.offset() >= end && sealedEnd >= end;
                    }
                }
                if (done && announcedUpTo(eventsTopic, topic, ends)) {
                    return;
                }
                Thread.sleep(500);
            }
        }
        throw new AssertionError("not everything sealed and announced within " + seconds + " s");
    }

    /** Whether the committed events of each partition's generations reach its end offset. */
    private boolean announcedUpTo(
            String eventsTopic, String topic, Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends) {
        Map<String, List<GenerationSealed>> announced = readEvents(eventsTopic);
        return ends.entrySet().stream().allMatch(e -> {
            long reached = announced.getOrDefault(ShardId.of(topic, e.getKey().partition()), List.of()).stream()
                    .mapToLong(event -> event.getLastOffset() + 1)
                    .max()
                    .orElse(0);
            return reached >= e.getValue().offset();
        });
    }

    /**
     * Every committed record of a topic, read from its beginning to its last stable offset as of now (assigned,
     * not subscribed: no group to join, no quiet period to guess).
     */
    static <K, V> List<ConsumerRecord<K, V>> readToEnd(
            String bootstrapServers, String topic, Deserializer<K> keys, Deserializer<V> values) {
        List<ConsumerRecord<K, V>> records = new ArrayList<>();
        try (KafkaConsumer<K, V> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        bootstrapServers,
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed"),
                keys,
                values)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(60)).stream()
                    .map(p -> new TopicPartition(topic, p.partition()))
                    .toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(60));
            long deadline = System.currentTimeMillis() + 120_000;
            while (partitions.stream().anyMatch(tp -> consumer.position(tp, Duration.ofSeconds(60)) < ends.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError(topic + " not read to its end " + ends + " within 120 s");
                }
                consumer.poll(Duration.ofMillis(300)).forEach(records::add);
            }
        }
        return records;
    }

    /** The committed GenerationSealed events of the topic, by shard, in generation order. */
    Map<String, List<GenerationSealed>> readEvents(String topic) {
        ConfluentAvroDeserializer<GenerationSealed> deserializer =
                new ConfluentAvroDeserializer<>(null, GenerationSealed.class);
        deserializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        Map<String, List<GenerationSealed>> byShard = new HashMap<>();
        for (ConsumerRecord<String, GenerationSealed> record :
                readToEnd(kafka.bootstrapServers(), topic, new StringDeserializer(), deserializer)) {
            byShard.computeIfAbsent(record.key(), k -> new ArrayList<>()).add(record.value());
        }
        byShard.values()
                .forEach(list -> list.sort(java.util.Comparator.comparingLong(GenerationSealed::getGeneration)));
        return byShard;
    }

    /**
     * Readers see each key once with its latest produced version, and the announced generations of each
     * partition tile [0, end) with no gap and no overlap, one event per generation.
     */
    void verify(Path tableDir, String topic, int partitions, String eventsTopic, Map<String, Long> latestVersion) {
        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            List<RolloutRow> rows = table.list(ListQuery.all(100_000));
            Map<String, Long> seen = new HashMap<>();
            for (RolloutRow row : rows) {
                assertThat(seen.put(row.recordId(), row.rollout().getPolicyVersion()))
                        .as("duplicate " + row.recordId())
                        .isNull();
            }
            assertThat(seen).isEqualTo(latestVersion);
        }
        Map<String, List<GenerationSealed>> announced = readEvents(eventsTopic);
        for (int p = 0; p < partitions; p++) {
            String shard = ShardId.of(topic, p);
            long next = 0;
            for (GenerationSealed event : announced.getOrDefault(shard, List.of())) {
                assertThat(event.getFirstOffset())
                        .as("shard %s generation %d starts where the previous ended", shard, event.getGeneration())
                        .isEqualTo(next);
                next = event.getLastOffset() + 1;
            }
            assertThat(next)
                    .as("announced generations of partition %d reach its records", p)
                    .isPositive();
        }
    }
}
