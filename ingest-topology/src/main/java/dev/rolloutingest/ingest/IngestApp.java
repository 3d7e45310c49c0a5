package dev.rolloutingest.ingest;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.Observability;
import dev.rolloutingest.runtime.ShadowGroupOffsets;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.table.RolloutTable;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;

/** ingest-topology as a running process: table, topology, Streams, /metrics and /health. */
public final class IngestApp implements AutoCloseable {
    private final PrometheusMeterRegistry registry;
    private final RolloutTable table;
    private final StreamsRuntime runtime;
    private final HttpEndpoint http;
    private final InflightBudget budget;
    private final SealWriters writers;
    private final ShadowGroupOffsets sealedLag;

    public IngestApp(IngestConfig config) {
        new SchemaRegistryClient(SerdeConfig.from(config.serdeConfig())).checkReachable();
        this.registry = Observability.prometheus("rollout-ingest");
        this.table = RolloutTable.createOrOpen(config.tableLocation(), config.tableSettings(), registry);
        String unwritable = config.faultUnwritableRecordIdPrefix();
        if (!unwritable.isEmpty()) {
            table.injectWriteFault(UnwritableRows.withRecordIdPrefix(unwritable));
        }
        this.budget = new InflightBudget(config.maxInflightBlobBytes());
        IngestMetrics metrics = new IngestMetrics(registry, budget);
        IngestHealth health = new IngestHealth();
        this.writers = new SealWriters(config.sealWriteThreads());
        this.sealedLag = config.sealedLagGroup().isEmpty()
                ? null
                : new ShadowGroupOffsets(
                        config.sealedLagGroup(),
                        IngestConfig.SEALED_LAG_GROUP,
                        config.clientConfig(),
                        Duration.ofMillis(config.lagPublishIntervalMs()));
        this.runtime = new StreamsRuntime(
                "rollout-ingest",
                IngestTopology.build(
                        config,
                        table,
                        metrics,
                        budget,
                        health,
                        writers,
                        sealedLag == null ? (tp, offset) -> {} : sealedLag::advance),
                config.streamsProperties(),
                registry,
                config.healthMaxThreadReplacements(),
                config.healthThreadReplacementWindowMs());
        this.http = new HttpEndpoint(config.httpHost(), config.httpPort());
        Observability.mountMetrics(http, registry);
        runtime.mountHealth(
                http,
                () -> Map.of("table", table.location().uri(), "inflight_bytes", budget.total()),
                () -> health.stuck(
                        runtime.assignedPartitions().stream()
                                .filter(tp -> tp.topic().equals(config.inputTopic()))
                                .map(TopicPartition::partition)
                                .collect(Collectors.toSet()),
                        runtime.state() == KafkaStreams.State.RUNNING,
                        System.currentTimeMillis(),
                        config.healthStuckAfterMs()));
    }

    public IngestApp start() {
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
        writers.close();
        if (sealedLag != null) {
            sealedLag.close();
        }
        http.close();
        table.close();
        registry.close();
    }

    /** Runs until SIGTERM: {@code IngestApp [config.properties]}, env vars override the file. */
    public static void main(String[] args) throws InterruptedException {
        IngestConfig config =
                IngestConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), System.getenv());
        StreamsRuntime.runUntilTerminated(new IngestApp(config).start(), "rollout-ingest");
    }
}
