package dev.rolloutingest.ingest;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.AppSettings;
import dev.rolloutingest.testsupport.Rollouts;
import dev.rolloutingest.testsupport.Services;
import dev.rolloutingest.testsupport.Topics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The ingest ITs' services and the checks they share, on {@link Services}: a real broker and registry for the test
 * class ({@code @RegisterExtension static final IngestCluster cluster = new IngestCluster("it-...")}), the ingest
 * app's settings for a run, and the checks of what it sealed and announced.
 */
final class IngestCluster implements BeforeAllCallback, AfterAllCallback {
    private final Services services;
    private Rollouts rollouts;

    IngestCluster(String folder) {
        this.services = Services.sharingRegistry(folder); // each run registers its own topics' subjects
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        services.beforeAll(context);
        rollouts = new Rollouts(services.cluster(), new RolloutGenerator("exp", 256, 11));
    }

    @Override
    public void afterAll(ExtensionContext context) {
        services.afterAll(context);
    }

    /** Where the services keep their files; a test's own go beside them. */
    Path root() {
        return services.root();
    }

    EmbeddedKafka kafka() {
        return services.cluster().kafka();
    }

    ApicurioRegistry registry() {
        return services.cluster().registry();
    }

    /** A test run's own topics: {@code input} with its partitions, {@code <run>-generations} and {@code <run>-dlq}. */
    void createRunTopics(String run, String input, int partitions) {
        services.cluster().createRunTopics(run, input, partitions);
    }

    /**
     * The ingest app's settings for a run: this cluster, the run's topics, its table in {@code work/table} and state
     * in {@code work/state}, an HTTP port of its own. Mutable: a test adds its seal settings.
     */
    Map<String, Object> appProps(String run, String input, Path work) {
        return AppSettings.of(services.cluster())
                .table(work.resolve("table"))
                .state(work.resolve("state"))
                .topicsOf(run, input)
                .map();
    }

    /** A producer of raw bytes (values up to 1 MB), acknowledged by all replicas: how a test sends what it crafted. */
    org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> rawProducer() {
        return new org.apache.kafka.clients.producer.KafkaProducer<>(
                Map.of(
                        org.apache.kafka.clients.producer.ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka().bootstrapServers(),
                        org.apache.kafka.clients.producer.ProducerConfig.ACKS_CONFIG,
                        "all",
                        org.apache.kafka.clients.producer.ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
                        1_000_000),
                new org.apache.kafka.common.serialization.ByteArraySerializer(),
                new org.apache.kafka.common.serialization.ByteArraySerializer());
    }

    /** Every record of a topic, as bytes. */
    List<ConsumerRecord<byte[], byte[]>> readAllBytes(String topic) {
        return readToEnd(
                kafka().bootstrapServers(),
                topic,
                new org.apache.kafka.common.serialization.ByteArrayDeserializer(),
                new org.apache.kafka.common.serialization.ByteArrayDeserializer());
    }

    /** The first header of that name, as text: the one a DLQ reader that trusts ours would find. */
    static String firstHeader(ConsumerRecord<byte[], byte[]> record, String name) {
        var headers = record.headers().headers(name).iterator();
        return headers.hasNext() ? new String(headers.next().value(), java.nio.charset.StandardCharsets.UTF_8) : null;
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
        rollouts.produce(topic, from, to, keys, latestVersion, produced, pauseEvery50Ms);
    }

    /** As fast as the broker takes them: sends without waiting, then waits for every acknowledgement. */
    void produceUnthrottled(
            String topic, int from, int to, int keys, Map<String, Long> latestVersion, AtomicLong produced) {
        rollouts.produceUnthrottled(topic, from, to, keys, latestVersion, produced);
    }

    Path writeConfig(Path dir, Map<String, String> extra) throws IOException {
        return sealingSoon().with(extra).writeTo(dir.resolve("ingest.properties"));
    }

    /** This cluster, small seals every 0.7 s and commits every 0.2 s: what the ingest ITs run with. */
    private AppSettings sealingSoon() {
        return AppSettings.of(services.cluster())
                .with("rollout.seal.max.rows", "60")
                .with("rollout.seal.max.age.ms", "700")
                .with("rollout.seal.check.interval.ms", "100")
                .with("streams.commit.interval.ms", "200");
    }

    /**
     * The config file of one of several instances of a run (its topics made by {@link #createRunTopics}): the run's
     * topics and application id, one table in {@code work/table}, the instance's own state in
     * {@code work/state-<instance>}, then {@code extra}.
     */
    Path instanceConfig(String run, String input, Path work, String instance, Map<String, String> extra)
            throws IOException {
        return sealingSoon()
                .topicsOf(run, input)
                .table(work.resolve("table"))
                .state(work.resolve("state-" + instance))
                .with(extra)
                .writeTo(work.resolve(instance).resolve("ingest.properties"));
    }

    void awaitCommitted(String group, String topic, int partitions, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        try (Admin admin = kafka().admin()) {
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
        try (Admin admin = kafka().admin()) {
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
                        List<SealedGeneration> sealed = table.generations().pending(ShardId.of(topic, p));
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

    /** Every committed record of a topic, read to its last stable offset as of now. */
    static <K, V> List<ConsumerRecord<K, V>> readToEnd(
            String bootstrapServers, String topic, Deserializer<K> keys, Deserializer<V> values) {
        return Topics.readToEnd(bootstrapServers, topic, keys, values);
    }

    /**
     * Until the group is stable with the stream threads of {@code instances} instances, each instance owning input
     * partitions, all of them together (within {@code seconds}).
     */
    void awaitGroup(String group, String input, int partitions, int instances, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        String last = "not described yet";
        try (Admin admin = kafka().admin()) {
            while (System.currentTimeMillis() < deadline) {
                ConsumerGroupDescription description;
                try {
                    description = admin.describeConsumerGroups(List.of(group))
                            .all()
                            .get()
                            .get(group);
                } catch (ExecutionException e) { // the group does not exist yet
                    last = e.getCause().toString();
                    Thread.sleep(200);
                    continue;
                }
                last = description.toString();
                // a member is one stream thread: its static id is the instance's with the thread's index after it
                Map<String, Set<Integer>> ownedByInstance = new TreeMap<>();
                for (MemberDescription member : description.members()) {
                    String instance = member.groupInstanceId()
                            .map(id -> id.substring(0, id.lastIndexOf('-')))
                            .orElse(member.consumerId());
                    Set<Integer> own = ownedByInstance.computeIfAbsent(instance, i -> new TreeSet<>());
                    member.assignment().topicPartitions().stream()
                            .filter(tp -> tp.topic().equals(input))
                            .forEach(tp -> own.add(tp.partition()));
                }
                Set<Integer> owned = new TreeSet<>();
                ownedByInstance.values().forEach(owned::addAll);
                if (description.groupState() == GroupState.STABLE
                        && ownedByInstance.size() == instances
                        && ownedByInstance.values().stream().noneMatch(Set::isEmpty)
                        && owned.size() == partitions) {
                    return;
                }
                Thread.sleep(200);
            }
        }
        throw new AssertionError(
                "group " + group + " not stable with " + instances + " instances within " + seconds + " s: " + last);
    }

    /** Until the log holds {@code text} after its first {@code from} bytes (within {@code seconds}). */
    static void awaitLog(Path log, long from, String text, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (!(Files.exists(log) && logAfter(log, from).contains(text))) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("no '" + text + "' in " + log + " within " + seconds + " s");
            }
            Thread.sleep(200);
        }
    }

    /** The log's text after its first {@code from} bytes. */
    static String logAfter(Path log, long from) throws IOException {
        byte[] all = Files.readAllBytes(log);
        return new String(all, (int) Math.min(from, all.length), (int) Math.max(0, all.length - from), UTF_8);
    }

    /** The committed GenerationSealed events of the topic, by shard, in generation order. */
    Map<String, List<GenerationSealed>> readEvents(String topic) {
        ConfluentAvroDeserializer<GenerationSealed> deserializer =
                new ConfluentAvroDeserializer<>(null, GenerationSealed.class);
        deserializer.configure(Map.of("schema.registry.url", registry().confluentUrl()), false);
        Map<String, List<GenerationSealed>> byShard = new HashMap<>();
        for (ConsumerRecord<String, GenerationSealed> record :
                readToEnd(kafka().bootstrapServers(), topic, new StringDeserializer(), deserializer)) {
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
