package dev.rolloutingest.ingest;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.DirectBuffers;
import dev.rolloutingest.runtime.NativePreload;
import dev.rolloutingest.runtime.RolloutApp;
import dev.rolloutingest.runtime.StreamsRuntime;
import io.micrometer.core.instrument.Gauge;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.kafka.streams.KafkaStreams;

/** ingest-topology as a running process: table, topology, Streams, /metrics and /health. */
public final class IngestApp extends RolloutApp {
    private final InflightBudget budget;
    private final SealWriters writers;

    public IngestApp(IngestConfig config) {
        this(config, IngestFaults.NONE);
    }

    /** @param faults where crash tests break the app (test scope); {@link IngestFaults#NONE} in production */
    IngestApp(IngestConfig config, IngestFaults faults) {
        super("rollout-ingest", config, config.sealedLagGroup(), IngestConfig.SEALED_LAG_GROUP);
        this.budget = new InflightBudget(config.maxInflightBlobBytes());
        IngestMetrics metrics = new IngestMetrics(registry, budget, config.tableSeries());
        IngestHealth health = new IngestHealth();
        this.writers = new SealWriters(config.sealWriteThreads());
        serve(
                "rollout-ingest",
                IngestTopology.build(config, tables, metrics, budget, health, writers, faults, shadowPositions()),
                config);
        Supplier<List<String>> stuck = () -> health.stuck(
                runtime().assignedPartitions().stream()
                        .filter(config.input()::isInputTopic)
                        .collect(Collectors.toSet()),
                runtime().state() == KafkaStreams.State.RUNNING,
                System.currentTimeMillis(),
                config.healthStuckAfterMs());
        runtime().mountHealth(http(), () -> Map.of("inflight_bytes", budget.total()), stuck);
        Gauge.builder("rollout.ingest.stuck.partitions", stuck, s -> s.get().size())
                .description("Input partitions of this instance whose oldest unsealed record is older than "
                        + IngestConfig.HEALTH_STUCK_AFTER_MS + " (what /health names)")
                .strongReference(true) // the supplier lives only here
                .register(registry());
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
        DirectBuffers.allocateUnzeroed(); // before any Netty class loads
        NativePreload.start(); // first: it overlaps the rest of the start
        IngestConfig config =
                IngestConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), System.getenv());
        StreamsRuntime.runUntilTerminated(new IngestApp(config).start(), "rollout-ingest");
    }
}
