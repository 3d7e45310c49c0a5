package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.Observability;
import dev.rolloutingest.runtime.ShadowGroupOffsets;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.table.RolloutTable;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.config.ConfigException;

/**
 * merge-worker as a running process: the topology, the round coordinator, table upkeep, and the HTTP endpoint
 * with the admin API ({@link MergeAdminApi}), /metrics and /health.
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
        this.coordinator = new MergeCoordinator(
                table,
                config.maxGenerations(),
                config.maxBytes(),
                config.roundMaxBytes(),
                config.threads(),
                metrics,
                config.faultHaltAfterMerges(),
                config.afterGenerations());
        this.maintenance = new TableMaintenanceRunner(table.location().uri(), metrics);
        ConfluentAvroDeserializer<GenerationSealed> events =
                new ConfluentAvroDeserializer<>(null, GenerationSealed.class);
        events.configure(config.serdeConfig(), false);
        ConfluentAvroSerializer<GenerationsMerged> merges = new ConfluentAvroSerializer<>();
        merges.configure(config.serdeConfig(), false);
        int partitions = partitionsOf(config);
        this.mergedLag = config.mergedLagGroup().isEmpty()
                ? null
                : new ShadowGroupOffsets(
                        config.mergedLagGroup(),
                        MergeConfig.MERGED_LAG_GROUP,
                        config.clientConfig(),
                        Duration.ofMillis(config.lagPublishIntervalMs()));
        this.runtime = new StreamsRuntime(
                "rollout-merge",
                MergeTopology.build(
                        config,
                        coordinator,
                        maintenance,
                        metrics,
                        partitions,
                        events,
                        merges,
                        mergedLag == null ? (tp, offset) -> {} : mergedLag::advance),
                config.streamsProperties(),
                registry,
                config.healthMaxThreadReplacements(),
                config.healthThreadReplacementWindowMs());
        this.http = new HttpEndpoint(config.httpHost(), config.httpPort());
        Observability.mountMetrics(http, registry);
        runtime.mountHealth(http, () -> Map.of("table", table.location().uri()));
        new MergeAdminApi(runtime, coordinator).mount(http);
    }

    /** The partition count of the events topic: which task owns a shard depends on it. */
    private static int partitionsOf(MergeConfig config) {
        try (Admin admin = Admin.create(config.clientConfig())) {
            return admin.describeTopics(List.of(config.generationsTopic()))
                    .allTopicNames()
                    .get(60, TimeUnit.SECONDS)
                    .get(config.generationsTopic())
                    .partitions()
                    .size();
        } catch (Exception e) {
            throw new ConfigException(
                    MergeConfig.GENERATIONS_TOPIC,
                    config.generationsTopic(),
                    "cannot describe the topic: " + e.getMessage());
        }
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
        MergeConfig config =
                MergeConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), System.getenv());
        StreamsRuntime.runUntilTerminated(new MergeApp(config).start(), "rollout-merge");
    }
}
