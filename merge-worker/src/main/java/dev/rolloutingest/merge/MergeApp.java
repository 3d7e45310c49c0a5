package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.runtime.Observability;
import dev.rolloutingest.runtime.ShadowGroupOffsets;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * merge-worker as a running process: the topology, the pass coordinator, and the admin endpoint:
 * GET /cooldowns, GET /pending, POST /merge/{shard} (manual, never gated by a cooldown), /metrics, /health.
 */
public final class MergeApp implements AutoCloseable {
    private final PrometheusMeterRegistry registry;
    private final RolloutTable table;
    private final MergeCoordinator coordinator;
    private final TableMaintenanceRunner maintenance;
    private final StreamsRuntime runtime;
    private final HttpEndpoint http;
    private final ShadowGroupOffsets mergedLag;

    public MergeApp(MergeConfig config) {
        new SchemaRegistryClient(SerdeConfig.from(config.serdeConfig())).checkReachable();
        this.registry = Observability.prometheus("rollout-merge");
        this.table = RolloutTable.createOrOpen(config.tableLocation(), config.tableSettings(), registry);
        MergeMetrics metrics = new MergeMetrics(registry);
        this.coordinator = new MergeCoordinator(table, config.maxGenerations(), config.maxBytes(), config.roundMaxBytes(),
                config.threads(), metrics, config.faultHaltAfterMerges(), config.afterGenerations());
        this.maintenance = new TableMaintenanceRunner(table.location().uri(), metrics);
        ConfluentAvroDeserializer<GenerationSealed> events = new ConfluentAvroDeserializer<>(null, GenerationSealed.class);
        events.configure(config.serdeConfig(), false);
        ConfluentAvroSerializer<GenerationsMerged> merges = new ConfluentAvroSerializer<>();
        merges.configure(config.serdeConfig(), false);
        int partitions = partitionsOf(config);
        this.mergedLag = config.mergedLagGroup().isEmpty() ? null : new ShadowGroupOffsets(config.mergedLagGroup(),
                MergeConfig.MERGED_LAG_GROUP, config.clientConfig(), java.time.Duration.ofMillis(config.lagPublishIntervalMs()));
        this.runtime = new StreamsRuntime("rollout-merge",
                MergeTopology.build(config, coordinator, maintenance, metrics, partitions, events, merges,
                        mergedLag == null ? (tp, offset) -> {} : mergedLag::advance),
                config.streamsProperties(), registry, config.healthMaxThreadReplacements(),
                config.healthThreadReplacementWindowMs());
        this.http = new HttpEndpoint(config.httpHost(), config.httpPort());
        Observability.mountMetrics(http, registry);
        runtime.mountHealth(http, () -> Map.of("table", table.location().uri()));
        http.route("/cooldowns", exchange -> HttpEndpoint.Response.json(200, cooldowns()));
        http.route("/pending", exchange -> HttpEndpoint.Response.json(200, pending()));
        http.route("/merge/", exchange -> {
            if (!"POST".equals(exchange.getRequestMethod())) {
                return HttpEndpoint.Response.error(405, "POST /merge/{shard}");
            }
            String shard = exchange.getRequestURI().getPath().substring("/merge/".length());
            if (!ShardId.isValid(shard)) {
                return HttpEndpoint.Response.error(400, "not a shard id (lowercase hyphenated UUID): " + shard);
            }
            return manual(shard);
        });
    }

    /** The partition count of the events topic: which task owns a shard depends on it. */
    private static int partitionsOf(MergeConfig config) {
        try (Admin admin = Admin.create(config.clientConfig())) {
            return admin.describeTopics(List.of(config.generationsTopic())).allTopicNames().get(60, TimeUnit.SECONDS)
                    .get(config.generationsTopic()).partitions().size();
        } catch (Exception e) {
            throw new ConfigException(MergeConfig.GENERATIONS_TOPIC, config.generationsTopic(),
                    "cannot describe the topic: " + e.getMessage());
        }
    }

    private HttpEndpoint.Response manual(String shard) throws Exception {
        try {
            MergeCoordinator.Outcome outcome = coordinator.manual(shard).get(10, TimeUnit.MINUTES);
            if (outcome.failed()) {
                String why = outcome.error() instanceof RolloutTableException.GenerationUnreadable unreadable
                        ? ": generation " + unreadable.generation() + " cannot be read" : "";
                return HttpEndpoint.Response.failure(500, "merge of shard " + shard + " failed" + why, outcome.error());
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("shard", shard);
            body.put("merged_generations", outcome.result().mergedGenerations());
            body.put("previous_watermark", outcome.result().previousWatermark());
            body.put("new_watermark", outcome.result().newWatermark());
            body.put("rows", outcome.result().rows());
            body.put("left_pending", outcome.result().leftover());
            body.put("duration_ms", outcome.duration().toMillis());
            return HttpEndpoint.Response.json(200, body);
        } catch (TimeoutException e) {
            return HttpEndpoint.Response.error(202, "merge of shard " + shard + " still running");
        }
    }

    private <T> List<T> readStore(String store, java.util.function.BiFunction<String, String, T> map) {
        ReadOnlyKeyValueStore<String, String> view = runtime.streams().store(
                StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
        List<T> out = new ArrayList<>();
        try (KeyValueIterator<String, String> all = view.all()) {
            all.forEachRemaining(kv -> out.add(map.apply(kv.key, kv.value)));
        }
        return out;
    }

    /** Every cooldown record: kind, target, failures, until, last error, active. */
    public List<Map<String, Object>> cooldowns() {
        long now = System.currentTimeMillis();
        try {
            return readStore(MergeTopology.COOLDOWN_STORE, (k, v) -> {
                Cooldown c = MergeScheduler.read(v, Cooldown.class);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("kind", c.kind());
                row.put("target", c.target());
                row.put("failures", c.failures());
                row.put("until", c.untilMs() == 0 ? null : Instant.ofEpochMilli(c.untilMs()).toString());
                row.put("active", c.activeAt(now));
                row.put("last_error", c.lastError());
                return row;
            });
        } catch (InvalidStateStoreException e) {
            return List.of();
        }
    }

    /** Per shard: pending generations known to the worker and the age of the oldest. */
    public Map<String, Object> pending() {
        long now = System.currentTimeMillis();
        List<Map<String, Object>> shards;
        try {
            shards = readStore(MergeTopology.BACKLOG_STORE, (k, v) -> {
                ShardBacklog backlog = MergeScheduler.read(v, ShardBacklog.class);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("shard", k);
                row.put("pending", backlog.count());
                row.put("oldest_age_ms", backlog.oldestAgeMs(now));
                return row;
            });
        } catch (InvalidStateStoreException e) {
            shards = List.of();
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("total", shards.stream().mapToInt(s -> (int) s.get("pending")).sum());
        body.put("shards", shards);
        body.put("last_round", coordinator.lastRound());
        return body;
    }

    public MergeApp start() {
        http.start();
        runtime.start();
        return this;
    }

    public StreamsRuntime runtime() {
        return runtime;
    }

    public HttpEndpoint http() {
        return http;
    }

    public RolloutTable table() {
        return table;
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    @Override
    public void close() {
        runtime.close();
        coordinator.close();
        maintenance.close();
        if (mergedLag != null) {
            mergedLag.close();
        }
        http.close();
        table.close();
        registry.close();
    }

    /** Runs until SIGTERM: {@code MergeApp [config.properties]}, env vars override the file. */
    public static void main(String[] args) throws InterruptedException {
        MergeConfig config = MergeConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), System.getenv());
        StreamsRuntime.runUntilTerminated(new MergeApp(config).start(), "rollout-merge");
    }
}
