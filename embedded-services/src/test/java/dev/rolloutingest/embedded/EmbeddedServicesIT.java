package dev.rolloutingest.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

class EmbeddedServicesIT {
    private static final Path TARGET = Path.of("target", "it-services").toAbsolutePath();

    @Test
    void kafkaBrokerServesProducerAndConsumerAndStopsItsThreads() throws Exception {
        Set<Thread> before = Thread.getAllStackTraces().keySet();
        Path dir = TARGET.resolve("kafka-" + UUID.randomUUID());
        int produced = 2_000;
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir)) {
            kafka.createTopics(List.of(new NewTopic("probe", 3, (short) 1)));
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                    Map.of(
                            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                            kafka.bootstrapServers(),
                            ProducerConfig.ACKS_CONFIG,
                            "all",
                            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                            true,
                            ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                            60_000),
                    new StringSerializer(),
                    new StringSerializer())) {
                for (int i = 0; i < produced; i++) {
                    producer.send(new ProducerRecord<>("probe", "k" + i, "v" + i));
                }
                producer.flush();
            }
            List<ConsumerRecord<String, String>> seen = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                    Map.of(
                            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                            ConsumerConfig.GROUP_ID_CONFIG, "probe-reader",
                            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                    new StringDeserializer(),
                    new StringDeserializer())) {
                consumer.subscribe(List.of("probe"));
                long deadline = System.currentTimeMillis() + 120_000;
                while (seen.size() < produced && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(200)).forEach(seen::add);
                }
            }
            assertThat(seen).hasSize(produced);
            assertThat(seen.stream().map(ConsumerRecord::key).collect(Collectors.toSet()))
                    .hasSize(produced);
        }
        assertThat(Files.exists(dir.resolve("log").resolve("meta.properties"))).isTrue();
        assertNoNewNonDaemonThreads(before);
    }

    @Test
    void topicReadinessWaitsForLeadersAndOffsetsAndNamesWhatIsMissing() {
        Path dir = TARGET.resolve("kafka-ready-" + UUID.randomUUID());
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir);
                var admin = kafka.admin()) {
            // The guard against KAFKA-15591: it returns only once every partition answers listOffsets.
            TopicReadiness.createAndAwait(admin, List.of(new NewTopic("ready", 4, (short) 1)), Duration.ofSeconds(60));
            var offsets = new java.util.HashMap<
                    org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec>();
            for (int p = 0; p < 4; p++) {
                offsets.put(
                        new org.apache.kafka.common.TopicPartition("ready", p),
                        org.apache.kafka.clients.admin.OffsetSpec.latest());
            }
            // Answered at once, not after retries until a leader is known: a hang guard, not a target.
            long asked = System.nanoTime();
            assertThat(admin.listOffsets(offsets).all()).succeedsWithin(Duration.ofSeconds(30));
            System.out.printf(
                    "readiness: listOffsets answered %d ms after it%n", (System.nanoTime() - asked) / 1_000_000);
            // Creating again is fine (exists), and a topic that never appears fails naming it.
            TopicReadiness.createAndAwait(admin, List.of(new NewTopic("ready", 4, (short) 1)), Duration.ofSeconds(60));
            org.assertj.core.api.Assertions.assertThatThrownBy(
                            () -> TopicReadiness.awaitReady(admin, List.of("never-created"), Duration.ofSeconds(2)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("never-created");
        }
    }

    @Test
    void brokerRestartsOnItsDirectoryWithTopicsKept() {
        Path dir = TARGET.resolve("kafka-restart-" + UUID.randomUUID());
        int brokerPort;
        int controllerPort;
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir)) {
            kafka.createTopics(List.of(new NewTopic("kept", 2, (short) 1)));
            brokerPort = kafka.brokerPort();
            controllerPort = kafka.controllerPort();
        }
        try (EmbeddedKafka again = EmbeddedKafka.start(dir, brokerPort, controllerPort);
                var admin = again.admin()) {
            TopicReadiness.awaitReady(admin, List.of("kept"), Duration.ofSeconds(120));
            assertThat(admin.listTopics().names())
                    .succeedsWithin(Duration.ofSeconds(30))
                    .satisfies(names -> assertThat(names).contains("kept"));
        }
    }

    @Test
    void apicurioRegistryServesTheConfluentApiAndDiesOnClose() throws Exception {
        Path dir = TARGET.resolve("registry");
        ApicurioRegistry registry = ApicurioRegistry.start(dir, Duration.ofSeconds(120));
        long pid = registry.pid();
        try {
            assertThat(registry.confluentUrl()).startsWith("http://127.0.0.1:");
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> response = http.send(
                    HttpRequest.newBuilder(URI.create(registry.confluentUrl() + "/subjects/probe-value/versions"))
                            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"schema\":\"\\\"string\\\"\"}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(response.statusCode()).isEqualTo(200);
            assertThat(response.body()).contains("\"id\"");
        } finally {
            registry.close();
        }
        assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                .isFalse();
        assertThat(dir.resolve("apicurio-registry")).isDirectory();
    }

    @Test
    void s3ProxyServesARealS3ClientInsideItsDirectory() throws Exception {
        Path dir = TARGET.resolve("s3-" + UUID.randomUUID());
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir, "rollouts");
                S3Client client = S3Client.builder()
                        .endpointOverride(URI.create(s3.endpoint()))
                        .region(Region.US_EAST_1)
                        .forcePathStyle(true)
                        .credentialsProvider(StaticCredentialsProvider.create(
                                AwsBasicCredentials.create(s3.accessKey(), s3.secretKey())))
                        .build()) {
            client.putObject(b -> b.bucket("rollouts").key("a/b.txt"), RequestBody.fromString("hello"));
            assertThat(client.getObjectAsBytes(b -> b.bucket("rollouts").key("a/b.txt"))
                            .asUtf8String())
                    .isEqualTo("hello");
            assertThat(s3.lanceStorageOptions()).containsEntry("aws_endpoint", s3.endpoint());
        }
        // The filesystem backend keeps objects under the given directory, inside target/.
        assertThat(dir.resolve("rollouts").resolve("a").resolve("b.txt")).exists();
    }

    private static void assertNoNewNonDaemonThreads(Set<Thread> before) throws InterruptedException {
        List<String> leaked = List.of();
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            leaked = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> !before.contains(t) && t.isAlive() && !t.isDaemon())
                    .map(Thread::getName)
                    .toList();
            if (leaked.isEmpty()) {
                return;
            }
            Thread.sleep(100);
        }
        assertThat(leaked).as("non-daemon threads left by the broker").isEmpty();
    }
}
