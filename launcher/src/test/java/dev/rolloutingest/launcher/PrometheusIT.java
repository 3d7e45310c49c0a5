package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.PrometheusServer;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.Observability;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import javax.net.ssl.SSLContext;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The operator's side through the real parts: both apps run with bearer tokens (the merge-worker over TLS, its
 * /metrics protected too), every admin route answers 401, 403 or its own answer as the caller's token says, and a
 * real Prometheus (skipped where the binary is absent) scrapes them with a token over TLS, evaluates the alert
 * rules without an error and holds a series for every metric a dashboard panel or alert rule queries.
 */
class PrometheusIT {
    private static final Path ROOT = Path.of("target", "it-prometheus").toAbsolutePath();
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final String READ_TOKEN = "prometheus-read-0123456789abcdef";
    private static final String ADMIN_TOKEN = "oncall-admin-0123456789abcdef";

    private final HttpClient plain = HttpClient.newHttpClient();

    @Test
    void theAppsRefuseCallersWithoutTheRoleAndARealPrometheusScrapesEverySeriesTheRulesAndDashboardsQuery()
            throws Exception {
        String run = "prom-" + UUID.randomUUID().toString().substring(0, 8);
        Path dir = ROOT.resolve(run);
        Files.createDirectories(dir);
        Path keystore = dir.resolve("merge-http.p12");
        Path caFile = dir.resolve("merge-http.pem");
        SSLContext trustMerge = SelfSignedTls.create(keystore, caFile);
        HttpClient https = HttpClient.newBuilder().sslContext(trustMerge).build();
        Path tokens = dir.resolve("http-tokens");
        Files.writeString(tokens, "prometheus read " + READ_TOKEN + "\noncall admin " + ADMIN_TOKEN + "\n");
        Path metricsToken = dir.resolve("metrics-token");
        Files.writeString(metricsToken, READ_TOKEN + "\n");

        try (TestCluster cluster = TestCluster.startSharingRegistry(dir)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            kafka.createTopics(List.of(
                    new NewTopic(run + "-rollouts", 2, (short) 1),
                    new NewTopic(run + "-generations", 1, (short) 1),
                    new NewTopic(run + "-dlq", 1, (short) 1),
                    new NewTopic(run + "-merges", 1, (short) 1)));
            Map<String, Object> common = new HashMap<>(Map.of(
                    "bootstrap.servers", kafka.bootstrapServers(),
                    "schema.registry.url", registry.confluentUrl(),
                    "rollout.table.uri", dir.resolve("table").toString(),
                    "http.port", "0",
                    "http.auth.tokens.file", tokens.toString(),
                    "rollout.generations.topic", run + "-generations",
                    "rollout.commit.interval.ms", "200"));
            Map<String, Object> ingestProps = new HashMap<>(common);
            ingestProps.putAll(Map.of(
                    "application.id",
                    run,
                    "rollout.input.topic",
                    run + "-rollouts",
                    "rollout.dlq.topic",
                    run + "-dlq",
                    "rollout.state.dir",
                    dir.resolve("ingest-state").toString(),
                    "rollout.seal.max.rows",
                    "20",
                    "rollout.seal.max.age.ms",
                    "500",
                    "rollout.seal.check.interval.ms",
                    "100"));
            Map<String, Object> mergeProps = new HashMap<>(common);
            mergeProps.putAll(Map.of(
                    "application.id",
                    run + "-merge",
                    "rollout.merges.topic",
                    run + "-merges",
                    "rollout.state.dir",
                    dir.resolve("merge-state").toString(),
                    "rollout.lag.merged.group",
                    run + "-merged",
                    "http.auth.metrics",
                    "true",
                    "http.tls.keystore.path",
                    keystore.toString(),
                    "http.tls.keystore.password",
                    "changeit"));
            try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
                    MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start()) {
                ingest.runtime().awaitRunning(Duration.ofSeconds(60));
                merge.runtime().awaitRunning(Duration.ofSeconds(60));
                String mergeUrl = merge.http().baseUrl();
                assertThat(mergeUrl).startsWith("https://");
                produce(kafka, registry, run);

                String shard = ShardId.of(run + "-rollouts", 0);
                Map<String, Integer> expected = new java.util.LinkedHashMap<>();
                expected.put("GET /pending|none", 401);
                expected.put("GET /pending|wrong", 401);
                expected.put("GET /pending|read", 200);
                expected.put("GET /cooldowns|read", 200);
                expected.put("GET /snapshots|read", 200);
                expected.put("POST /merge/" + shard + "|none", 401);
                expected.put("POST /merge/" + shard + "|read", 403);
                expected.put("POST /merge/" + shard + "|admin", 200);
                expected.put("POST /snapshots/nightly|read", 403);
                expected.put("POST /snapshots/nightly|admin", 201);
                expected.put("DELETE /snapshots/nightly|read", 403);
                expected.put("DELETE /snapshots/nightly|admin", 204);
                expected.put("GET /metrics|none", 401);
                expected.put("GET /metrics|read", 200);
                expected.put("GET /health|none", 200);
                Map<String, Integer> answered = new java.util.LinkedHashMap<>();
                for (String call : expected.keySet()) {
                    String[] parts = call.split("[ |]");
                    String token =
                            switch (parts[2]) {
                                case "read" -> READ_TOKEN;
                                case "admin" -> ADMIN_TOKEN;
                                case "wrong" -> "wrong-token-0123456789abcdef";
                                default -> null;
                            };
                    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(mergeUrl + parts[1]))
                            .method(parts[0], HttpRequest.BodyPublishers.noBody());
                    if (token != null) {
                        request.header("Authorization", "Bearer " + token);
                    }
                    HttpResponse<String> response = https.send(request.build(), HttpResponse.BodyHandlers.ofString());
                    answered.put(call, response.statusCode());
                    assertThat(response.body()).as(call).doesNotContain(READ_TOKEN, ADMIN_TOKEN, dir.toString());
                }
                assertThat(answered).as("the merge-worker's routes by caller").isEqualTo(expected);
                // The ingest app: tokens, no TLS, /metrics open by default.
                assertThat(plain.send(
                                        HttpRequest.newBuilder(
                                                        URI.create(ingest.http().baseUrl() + "/metrics"))
                                                .build(),
                                        HttpResponse.BodyHandlers.ofString())
                                .statusCode())
                        .isEqualTo(200);

                PrometheusMeterRegistry readMeters = Observability.prometheus("rollout-read");
                try (RolloutTable readTable = RolloutTable.open(
                                TableLocation.local(dir.resolve("table")), TableSettings.DEFAULTS, readMeters);
                        HttpEndpoint read = new HttpEndpoint(
                                "127.0.0.1",
                                0,
                                HttpAccess.fromEnv(Map.of("HTTP_AUTH_TOKENS_FILE", tokens.toString())))) {
                    Observability.mountMetrics(read, readMeters);
                    new ReadApi(readTable).mount(read);
                    read.start();
                    assertThat(plain.send(
                                            HttpRequest.newBuilder(URI.create(read.baseUrl() + "/rollouts/prom-7"))
                                                    .build(),
                                            HttpResponse.BodyHandlers.ofString())
                                    .statusCode())
                            .isEqualTo(401);
                    plain.send(
                            HttpRequest.newBuilder(URI.create(read.baseUrl() + "/rollouts/prom-7"))
                                    .header("Authorization", "Bearer " + READ_TOKEN)
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());

                    assumeTrue(
                            PrometheusServer.onPath("prometheus").isPresent(),
                            "prometheus is not installed (scripts/install-test-tools installs Debian's package):"
                                    + " the routes were checked, the real scrape is skipped");
                    scrapedByARealPrometheus(dir, ingest, merge, read, caFile, metricsToken);
                }
            }
        }
    }

    private void scrapedByARealPrometheus(
            Path dir, IngestApp ingest, MergeApp merge, HttpEndpoint read, Path caFile, Path metricsToken)
            throws Exception {
        Files.copy(REPO.resolve("docker/prometheus/rules.yml"), dir.resolve("rules.yml"));
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(
                config,
                """
                global:
                  scrape_interval: 1s
                  evaluation_interval: 1s
                rule_files: [rules.yml]
                scrape_configs:
                  - job_name: rollout-ingest
                    static_configs:
                      - targets: ["%s", "%s"]
                  - job_name: rollout-ingest-tls
                    scheme: https
                    tls_config: { ca_file: "%s" }
                    authorization: { credentials_file: "%s" }
                    static_configs:
                      - targets: ["%s"]
                """
                        .formatted(
                                hostPort(ingest.http().baseUrl()),
                                hostPort(read.baseUrl()),
                                caFile,
                                metricsToken,
                                hostPort(merge.http().baseUrl())));
        try (PrometheusServer prometheus =
                PrometheusServer.start(config, dir.resolve("prometheus"), Duration.ofSeconds(60))) {
            long deadline = System.currentTimeMillis() + 60_000;
            JsonNode up = prometheus.query("up");
            while (System.currentTimeMillis() < deadline) {
                up = prometheus.query("up == 1");
                if (up.size() == 3) {
                    break;
                }
                Thread.sleep(500);
            }
            assertThat(up.size())
                    .as("targets up: %s; %s", prometheus.api("targets", null, null), prometheus.logFile())
                    .isEqualTo(3);
            // Two scrapes more, so counters that moved since start have two samples.
            Thread.sleep(2_500);

            Set<String> queried = new TreeSet<>();
            List<String> expressions = new ArrayList<>(ObservabilityIT.dashboardExpressions());
            expressions.addAll(ObservabilityIT.ruleExpressions());
            for (String expr : expressions) {
                ObservabilityIT.metricNames(expr).stream()
                        .filter(name -> !ObservabilityIT.exporterMetric(name))
                        .forEach(queried::add);
            }
            assertThat(queried).contains("rollout_app_running", "rollout_ingest_stuck_partitions");
            List<String> absent = new ArrayList<>();
            for (String name : queried) {
                if (prometheus.api("series", "match[]", name).isEmpty()) {
                    absent.add(name);
                }
            }
            assertThat(absent)
                    .as("series a dashboard or rule queries that Prometheus never scraped")
                    .isEmpty();
            assertThat(prometheus
                            .query("sum(rollout_app_running)")
                            .get(0)
                            .path("value")
                            .get(1)
                            .asDouble())
                    .as("both Streams clients RUNNING, as Prometheus sees them")
                    .isEqualTo(2.0);

            JsonNode groups = prometheus.api("rules", null, null).path("groups");
            List<String> unhealthy = new ArrayList<>();
            int rules = 0;
            deadline = System.currentTimeMillis() + 10_000;
            while (true) {
                unhealthy.clear();
                rules = 0;
                for (JsonNode group : prometheus.api("rules", null, null).path("groups")) {
                    for (JsonNode rule : group.path("rules")) {
                        rules++;
                        if (!"ok".equals(rule.path("health").asText())) {
                            unhealthy.add(rule.path("name").asText() + ": "
                                    + rule.path("health").asText() + " "
                                    + rule.path("lastError").asText());
                        }
                    }
                }
                if (unhealthy.isEmpty() || System.currentTimeMillis() > deadline) {
                    break;
                }
                Thread.sleep(500);
            }
            assertThat(groups.size()).isPositive();
            assertThat(rules).isGreaterThanOrEqualTo(10);
            assertThat(unhealthy).as("rules Prometheus could not evaluate").isEmpty();
        }
    }

    private static String hostPort(String baseUrl) {
        return URI.create(baseUrl).getAuthority();
    }

    private static void produce(EmbeddedKafka kafka, ApicurioRegistry registry, String run) throws Exception {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("prom", 64, 1);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < 100; i++) {
                Rollout rollout = generator.rollout(i, 0);
                producer.send(new ProducerRecord<>(
                                run + "-rollouts",
                                rollout.getRecordId().getBytes(),
                                serializer.serialize(run + "-rollouts", rollout)))
                        .get();
            }
            // and a dead letter, so the dead-letter series exists
            producer.send(new ProducerRecord<>(run + "-rollouts", "bad".getBytes(), "not avro".getBytes()))
                    .get();
        }
        Thread.sleep(2_000); // a few seals
    }
}
