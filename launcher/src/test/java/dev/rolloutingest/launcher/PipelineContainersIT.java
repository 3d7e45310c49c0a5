package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.TopicReadiness;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.table.rows.RolloutRow;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The pipeline on the images docker/docker-compose.yml pins (Kafka, Confluent Schema Registry, MinIO), read
 * from that file so the two cannot drift. This is where the serde meets Confluent's own registry: our
 * serializer registers the schema there, the wire bytes carry Confluent's id, and ingest decodes them.
 * Runs with {@code mvn -Ptestcontainers verify} on a machine whose Docker engine can pull images; skipped
 * otherwise.
 */
class PipelineContainersIT {
    private static final Path COMPOSE = Path.of("..", "docker", "docker-compose.yml");
    private static final String S3_USER = "rollout";
    private static final String S3_PASSWORD = "rollout-secret";
    private static Network network;
    private static KafkaContainer kafka;
    private static GenericContainer<?> registry;
    private static GenericContainer<?> minio;
    private static boolean docker;

    @BeforeAll
    static void containers() throws Exception {
        docker = DockerClientFactory.instance().isDockerAvailable();
        if (!docker) {
            return;
        }
        network = Network.newNetwork();
        kafka = new KafkaContainer(DockerImageName.parse(composeImage("kafka")))
                .withNetwork(network)
                .withListener("kafka:19092");
        kafka.start();
        registry = new GenericContainer<>(DockerImageName.parse(composeImage("schema-registry")))
                .withNetwork(network)
                .withEnv("SCHEMA_REGISTRY_HOST_NAME", "schema-registry")
                .withEnv("SCHEMA_REGISTRY_LISTENERS", "http://0.0.0.0:8081")
                .withEnv("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS", "PLAINTEXT://kafka:19092")
                .withExposedPorts(8081)
                .waitingFor(Wait.forHttp("/subjects").forStatusCode(200))
                .withStartupTimeout(Duration.ofMinutes(3));
        registry.start();
        minio = new GenericContainer<>(DockerImageName.parse(composeImage("minio")))
                .withNetwork(network)
                .withCommand("server", "/data")
                .withEnv("MINIO_ROOT_USER", S3_USER)
                .withEnv("MINIO_ROOT_PASSWORD", S3_PASSWORD)
                .withExposedPorts(9000)
                .waitingFor(Wait.forHttp("/minio/health/live").forPort(9000));
        minio.start();
        try (S3Client s3 = S3Client.builder()
                .httpClientBuilder(UrlConnectionHttpClient.builder())
                .region(Region.US_EAST_1)
                .forcePathStyle(true)
                .endpointOverride(URI.create(minioEndpoint()))
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(S3_USER, S3_PASSWORD)))
                .build()) {
            s3.createBucket(b -> b.bucket("rollouts")); // Lance does not create buckets
        }
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {minio, registry, kafka, network}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // best effort: Testcontainers' reaper removes what is left
            }
        }
    }

    /** The image a compose service pins, e.g. {@code apache/kafka:4.1.0}. */
    static String composeImage(String service) throws Exception {
        Matcher m = Pattern.compile("(?m)^  " + Pattern.quote(service) + ":\\s*\\n(?:    .*\\n)*?    image: (\\S+)")
                .matcher(Files.readString(COMPOSE));
        assertThat(m.find())
                .as("service %s with an image in %s", service, COMPOSE)
                .isTrue();
        return m.group(1);
    }

    private static String minioEndpoint() {
        return "http://" + minio.getHost() + ":" + minio.getMappedPort(9000);
    }

    private static String registryUrl() {
        return "http://" + registry.getHost() + ":" + registry.getMappedPort(8081);
    }

    @Test
    void rolloutsSerializedAgainstConfluentsRegistryLandMergeAndReadFromMinio() throws Exception {
        Assumptions.assumeTrue(
                docker,
                "skipped: no Docker engine reachable; the Testcontainers tests run on machines"
                        + " with Docker (mvn -Ptestcontainers verify)");
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.getBootstrapServers()))) {
            TopicReadiness.createAndAwait(
                    admin,
                    List.of(
                            new NewTopic("rollouts", 2, (short) 1),
                            new NewTopic("rollout-generations", 2, (short) 1),
                            new NewTopic("rollout-merges", 1, (short) 1),
                            new NewTopic("rollouts-dlq", 1, (short) 1)),
                    Duration.ofSeconds(60));
        }
        Path state = Path.of("target", "it-containers").toAbsolutePath();
        Map<String, Object> common = new HashMap<>(Map.of(
                "bootstrap.servers",
                kafka.getBootstrapServers(),
                "schema.registry.url",
                registryUrl(),
                "rollout.table.uri",
                "s3://rollouts/table",
                "http.port",
                "0",
                "rollout.table.storage.aws_endpoint",
                minioEndpoint(),
                "rollout.table.storage.aws_region",
                "us-east-1",
                "rollout.table.storage.aws_access_key_id",
                S3_USER,
                "rollout.table.storage.aws_secret_access_key",
                S3_PASSWORD,
                "rollout.table.storage.allow_http",
                "true"));
        Map<String, Object> ingestProps = new HashMap<>(common);
        ingestProps.putAll(
                Map.of("rollout.state.dir", state.resolve("ingest").toString(), "rollout.seal.max.age.ms", "500"));
        Map<String, Object> mergeProps = new HashMap<>(common);
        mergeProps.putAll(Map.of(
                "rollout.state.dir",
                state.resolve("merge").toString(),
                "rollout.merge.after.generations",
                "1",
                "rollout.merge.max.pending.age.ms",
                "500"));

        new RolloutPublisher(kafka.getBootstrapServers(), registryUrl())
                .publish("rollouts", "tc", 500, 500, 256, 0, new AtomicLong());
        try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
                MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start()) {
            long deadline = System.currentTimeMillis() + 180_000;
            while (merge.table().countBaseRows() < 500 && System.currentTimeMillis() < deadline) {
                Thread.sleep(500);
            }
            assertThat(merge.table().countBaseRows()).isEqualTo(500);
            Rollout expected = new RolloutGenerator("tc", 256, 20_261_130L).rollout(17, 0);
            Optional<RolloutRow> row = ingest.table().get(expected.getRecordId().toString());
            assertThat(row).isPresent();
            assertThat(row.get().rollout().getBinaryPayload()).isEqualTo(expected.getBinaryPayload());
        }

        // The wire bytes carry the id Confluent's registry assigned, and decode with our deserializer.
        HttpResponse<String> latest = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(registryUrl() + "/subjects/rollouts-value/versions/latest"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        assertThat(latest.statusCode()).isEqualTo(200);
        Matcher id = Pattern.compile("\"id\"\\s*:\\s*(\\d+)").matcher(latest.body());
        assertThat(id.find()).isTrue();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.getBootstrapServers(),
                        ConsumerConfig.GROUP_ID_CONFIG,
                        "tc-check",
                        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                        "earliest"),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("rollouts"));
            ConsumerRecord<byte[], byte[]> first = null;
            long deadline = System.currentTimeMillis() + 120_000;
            while (first == null && System.currentTimeMillis() < deadline) {
                var records = consumer.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    first = records.iterator().next();
                }
            }
            assertThat(first).isNotNull();
            assertThat(first.value()[0]).as("Confluent magic byte").isZero();
            assertThat(ByteBuffer.wrap(first.value(), 1, 4).getInt()).isEqualTo(Integer.parseInt(id.group(1)));
            ConfluentAvroDeserializer<Rollout> deserializer = new ConfluentAvroDeserializer<>(null, Rollout.class);
            deserializer.configure(Map.of("schema.registry.url", registryUrl()), false);
            assertThat(deserializer
                            .deserialize("rollouts", first.value())
                            .getRecordId()
                            .toString())
                    .isEqualTo(new String(first.key(), java.nio.charset.StandardCharsets.UTF_8));
        }
    }
}
