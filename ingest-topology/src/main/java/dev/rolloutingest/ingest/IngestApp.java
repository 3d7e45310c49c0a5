package dev.rolloutingest.ingest;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.RolloutApp;
import dev.rolloutingest.runtime.StreamsRuntime;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;

/** ingest-topology as a running process: table, topology, Streams, /metrics and /health. */
public final class IngestApp extends RolloutApp {
    private final InflightBudget budget;
    private final SealWriters writers;

    public IngestApp(IngestConfig config) {
        super("rollout-ingest", config, config.sealedLagGroup(), IngestConfig.SEALED_LAG_GROUP);
        String unwritable = config.faultUnwritableRecordIdPrefix();
        if (!unwritable.isEmpty()) {
            table.injectWriteFault(UnwritableRows.withRecordIdPrefix(unwritable));
        }
        this.budget = new InflightBudget(config.maxInflightBlobBytes());
        IngestMetrics metrics = new IngestMetrics(registry, budget);
        IngestHealth health = new IngestHealth();
        this.writers = new SealWriters(config.sealWriteThreads());
        serve(
                "rollout-ingest",
                IngestTopology.build(config, table, metrics, budget, health, writers, shadowPositions()),
                config);
        runtime()
                .mountHealth(
                        http(),
                        () -> Map.of("table", table.location().uri(), "inflight_bytes", budget.total()),
                        () -> health.stuck(
                                runtime().assignedPartitions().stream()
                                        .filter(tp -> tp.topic().equals(config.inputTopic()))
                                        .map(TopicPartition::partition)
                                        .collect(Collectors.toSet()),
                                runtime().state() == KafkaStreams.State.RUNNING,
                                System.currentTimeMillis(),
                                config.healthStuckAfterMs()));
    }

    public IngestApp start() {
        startServing();
        return this;
    }

    @Override
    protected void closeOwnParts() {
        writers.close();
    }

    /** Runs until SIGTERM: {@code IngestApp [config.properties]}, env vars override the file. */
    public static void main(String[] args) throws InterruptedException {
        IngestConfig config =
                IngestConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), System.getenv());
        StreamsRuntime.runUntilTerminated(new IngestApp(config).start(), "rollout-ingest");
    }
}
