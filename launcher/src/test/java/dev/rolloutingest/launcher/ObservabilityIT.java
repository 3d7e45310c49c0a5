package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * What operators look at says what is true: running ingest, merge and read processes are scraped, and every
 * metric the Grafana dashboards, the Prometheus alert rules and the runbooks name resolves to at least one
 * series (histogram panels to their _bucket series). Nothing is listed by hand: the files are parsed. Metrics
 * of the broker-side lag exporter (kafka_consumergroup_*, kafka_topic_*) and Prometheus' own `up` are the
 * only ones these processes cannot serve.
 */
class ObservabilityIT {
    private static final Path ROOT = Path.of("target", "it-observability").toAbsolutePath();
    private static final Path REPO = Path.of("..").toAbsolutePath().normalize();
    private static final Set<String> PROMQL_WORDS = Set.of(
            "sum",
            "max",
            "min",
            "avg",
            "count",
            "rate",
            "irate",
            "increase",
            "deriv",
            "histogram_quantile",
            "by",
            "without",
            "and",
            "or",
            "unless",
            "on",
            "ignoring",
            "group_left",
            "group_right",
            "offset",
            "bool",
            "topk",
            "bottomk",
            "abs",
            "delta",
            "idelta",
            "clamp_min",
            "clamp_max",
            "le",
            "sort",
            "sort_desc",
            "absent",
            "label_replace",
            "vector",
            "scalar",
            "time",
            "quantile_over_time",
            "max_over_time",
            "min_over_time",
            "avg_over_time",
            "sum_over_time");
    private static final Pattern RUNBOOK_METRIC = Pattern.compile("\\b((?:rollout|merge|kafka_consumer)_[a-z0-9_]+)");

    /** Metric names in a PromQL expression: strings, label matchers, grouping clauses and ranges removed. */
    static Set<String> metricNames(String promql) {
        String bare = promql.replaceAll("\"[^\"]*\"", "")
                .replaceAll("\\{[^}]*}", " ")
                .replaceAll("\\[[^\\]]*]", " ")
                .replaceAll("\\b(by|without|on|ignoring)\\s*\\([^)]*\\)", " ");
        Set<String> names = new TreeSet<>();
        Matcher m = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*").matcher(bare);
        while (m.find()) {
            String token = m.group();
            if (!PROMQL_WORDS.contains(token) && token.contains("_")) {
                names.add(token);
            }
        }
        return names;
    }

    static boolean exporterMetric(String name) {
        return name.startsWith("kafka_consumergroup_") || name.startsWith("kafka_topic_");
    }

    private static Set<String> scraped(HttpClient http, String baseUrl) throws Exception {
        String body = http.send(
                        HttpRequest.newBuilder(URI.create(baseUrl + "/metrics")).build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
        Set<String> names = new TreeSet<>();
        body.lines().filter(l -> !l.startsWith("#") && !l.isBlank()).forEach(l -> names.add(l.split("[{ ]", 2)[0]));
        return names;
    }

    static List<String> dashboardExpressions() throws Exception {
        List<String> expressions = new ArrayList<>();
        try (Stream<Path> files = Files.list(REPO.resolve("docker/grafana/dashboards"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".json")).toList()) {
                JsonNode dashboard = HttpEndpoint.JSON.readTree(file.toFile());
                dashboard.path("panels").forEach(panel -> panel.path("targets")
                        .forEach(target -> expressions.add(target.path("expr").asText())));
            }
        }
        return expressions;
    }

    static List<String> ruleExpressions() throws Exception {
        List<String> expressions = new ArrayList<>();
        String rules = Files.readString(REPO.resolve("docker/prometheus/rules.yml"));
        Matcher m =
                Pattern.compile("(?m)^\\s+expr:\\s*(.+(?:\\n\\s{10,}\\S.*)*)").matcher(rules);
        while (m.find()) {
            expressions.add(m.group(1));
        }
        return expressions;
    }

    private static Set<String> runbookMetrics() throws Exception {
        Set<String> names = new TreeSet<>();
        try (Stream<Path> files = Files.list(REPO.resolve("runbooks"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".md")).toList()) {
                Matcher m = RUNBOOK_METRIC.matcher(Files.readString(file));
                while (m.find()) {
                    names.add(m.group(1));
                }
            }
        }
        return names;
    }

    @Test
    void everyMetricTheDashboardsRulesAndRunbooksNameIsServedAndTheBacklogGaugeSumsTheTasks() throws Exception {
        String run = "obs-" + UUID.randomUUID().toString().substring(0, 8);
        Path dir = ROOT.resolve(run);
        try (TestCluster cluster = TestCluster.startSharingRegistry(dir)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            kafka.createTopics(List.of(
                    new NewTopic(run + "-rollouts", 6, (short) 1),
                    new NewTopic(run + "-generations", 2, (short) 1),
                    new NewTopic(run + "-dlq", 1, (short) 1),
                    new NewTopic(run + "-merges", 1, (short) 1)));
            Map<String, Object> common = new HashMap<>(Map.of(
                    "bootstrap.servers",
                    kafka.bootstrapServers(),
                    "schema.registry.url",
                    registry.confluentUrl(),
                    "rollout.table.uri",
                    dir.resolve("table").toString(),
                    "http.port",
                    "0",
                    "rollout.generations.topic",
                    run + "-generations",
                    "rollout.commit.interval.ms",
                    "200"));
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
            // No automatic merge: the backlog builds up on both tasks of the 2-partition events topic.
            mergeProps.putAll(Map.of(
                    "application.id",
                    run + "-merge",
                    "rollout.merges.topic",
                    run + "-merges",
                    "rollout.state.dir",
                    dir.resolve("merge-state").toString(),
                    "rollout.merge.after.generations",
                    "0",
                    "rollout.merge.max.pending.age.ms",
                    "0",
                    "rollout.lag.merged.group",
                    run + "-merged"));
            HttpClient http = HttpClient.newHttpClient();
            try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
                    MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start()) {
                ingest.runtime().awaitRunning(Duration.ofSeconds(60));
                merge.runtime().awaitRunning(Duration.ofSeconds(60));
                ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
                serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
                RolloutGenerator generator = new RolloutGenerator("obs", 64, 1);
                try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
                        new ByteArraySerializer(),
                        new ByteArraySerializer())) {
                    for (int i = 0; i < 300; i++) {
                        Rollout rollout = generator.rollout(i, 0);
                        producer.send(new ProducerRecord<>(
                                        run + "-rollouts",
                                        rollout.getRecordId().getBytes(),
                                        serializer.serialize(run + "-rollouts", rollout)))
                                .get();
                    }
                    producer.send(new ProducerRecord<>(run + "-rollouts", "bad".getBytes(), "not avro".getBytes()))
                            .get();
                }
                // Every partition sealed, and the merge-worker knows every generation.
                long deadline = System.currentTimeMillis() + 90_000;
                int sealed = 0;
                int known = -1;
                while (System.currentTimeMillis() < deadline) {
                    sealed = 0;
                    try (RolloutTable table = RolloutTable.open(
                            TableLocation.local(dir.resolve("table")),
                            TableSettings.DEFAULTS,
                            new io.micrometer.core.instrument.simple.SimpleMeterRegistry())) {
                        for (int p = 0; p < 6; p++) {
                            sealed += table.generations()
                                    .pending(ShardId.of(run + "-rollouts", p))
                                    .size();
                        }
                    }
                    known = pendingTotal(http, merge.http().baseUrl());
                    if (sealed >= 15 && known == sealed) {
                        break;
                    }
                    Thread.sleep(500);
                }
                assertThat(known).as("the merge-worker knows every generation").isEqualTo(sealed);
                // A tick publishes the gauge, and a partition's age trigger may still seal one more: compare
                // the gauge with /pending read before and after it, until both reads agree.
                double gauge = -1;
                int total = -1;
                deadline = System.currentTimeMillis() + 60_000;
                while (System.currentTimeMillis() < deadline) {
                    int before = pendingTotal(http, merge.http().baseUrl());
                    gauge = merge.registry()
                            .get("rollout.merge.backlog.generations")
                            .gauge()
                            .value();
                    total = pendingTotal(http, merge.http().baseUrl());
                    if (total == before && gauge == total) {
                        break;
                    }
                    Thread.sleep(200);
                }
                assertThat(gauge)
                        .as("the backlog gauge sums both tasks, as /pending does")
                        .isEqualTo(total);

                // One merge failure: a shard whose oldest pending seal is unreadable, merged by hand.
                String shard = ShardId.of(run + "-rollouts", 0);
                Path seal;
                try (Stream<Path> seals = Files.list(dir.resolve("table/_seals").resolve(shard))) {
                    seal = seals.sorted().findFirst().orElseThrow();
                }
                byte[] good = Files.readAllBytes(seal);
                Files.writeString(seal, "{ not json");
                HttpResponse<String> failed = http.send(
                        HttpRequest.newBuilder(URI.create(merge.http().baseUrl() + "/merge/" + shard))
                                .POST(HttpRequest.BodyPublishers.noBody())
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(failed.statusCode()).as(failed.body()).isEqualTo(500);
                Files.write(seal, good);
                // And successful ones, so pass and round histograms have samples.
                for (int p = 1; p < 6; p++) {
                    http.send(
                            HttpRequest.newBuilder(URI.create(
                                            merge.http().baseUrl() + "/merge/" + ShardId.of(run + "-rollouts", p)))
                                    .POST(HttpRequest.BodyPublishers.noBody())
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                }

                PrometheusMeterRegistry readMeters = Observability.prometheus("rollout-read");
                try (RolloutTable readTable = RolloutTable.open(
                                TableLocation.local(dir.resolve("table")), TableSettings.DEFAULTS, readMeters);
                        HttpEndpoint read = new HttpEndpoint("127.0.0.1", 0)) {
                    Observability.mountMetrics(read, readMeters);
                    new ReadApi(readTable).mount(read);
                    read.start();
                    http.send(
                            HttpRequest.newBuilder(URI.create(read.baseUrl() + "/rollouts/obs-7"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    Set<String> served = new TreeSet<>();
                    served.addAll(scraped(http, ingest.http().baseUrl()));
                    served.addAll(scraped(http, merge.http().baseUrl()));
                    served.addAll(scraped(http, read.baseUrl()));

                    Map<String, String> missing = new HashMap<>();
                    List<String> expressions = new ArrayList<>(dashboardExpressions());
                    expressions.addAll(ruleExpressions());
                    assertThat(expressions).hasSizeGreaterThan(15);
                    for (String expr : expressions) {
                        for (String name : metricNames(expr)) {
                            if (!exporterMetric(name) && !name.equals("up") && !served.contains(name)) {
                                missing.put(name, expr);
                            }
                        }
                    }
                    for (String name : runbookMetrics()) {
                        boolean servedAsIs =
                                served.contains(name) || served.stream().anyMatch(s -> s.startsWith(name + "_"));
                        if (!servedAsIs) {
                            missing.put(name, "a runbook");
                        }
                    }
                    assertThat(missing)
                            .as("metrics named by dashboards, rules or runbooks that no process serves")
                            .isEmpty();
                }
            }
        }
    }

    private static int pendingTotal(HttpClient http, String baseUrl) throws Exception {
        return HttpEndpoint.JSON
                .readTree(http.send(
                                HttpRequest.newBuilder(URI.create(baseUrl + "/pending"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())
                        .body())
                .path("total")
                .asInt();
    }
}
