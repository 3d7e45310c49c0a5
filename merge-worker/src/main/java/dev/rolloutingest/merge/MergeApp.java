package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.DirectBuffers;
import dev.rolloutingest.runtime.NativePreload;
import dev.rolloutingest.runtime.RolloutApp;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.config.ConfigException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * merge-worker as a running process: the topology, the round coordinator, table upkeep, and the HTTP endpoint
 * with the admin API ({@link MergeAdminApi}), /metrics and /health.
 */
public final class MergeApp extends RolloutApp {
    private static final Logger log = LoggerFactory.getLogger(MergeApp.class);
    private final MergeTables merges;
    private final TableMaintenanceRunner maintenance;

    public MergeApp(MergeConfig config) {
        this(config, MergeFaults.NONE);
    }

    /** @param faults where crash tests break the worker (test scope); {@link MergeFaults#NONE} in production */
    MergeApp(MergeConfig config, MergeFaults faults) {
        super("rollout-merge", config, config.mergedLagGroup(), MergeConfig.MERGED_LAG_GROUP);
        MergeMetrics metrics = new MergeMetrics(registry, config.tableSeries());
        this.merges = new MergeTables(
                tables,
                new ShardMerges(metrics, config.afterGenerations(), faults::passCommitted),
                faults::tableOpened);
        this.maintenance =
                new TableMaintenanceRunner(metrics, config.maintenanceThreads(), config.maintenanceTimeout());
        if (config.deleteRetention().compareTo(java.time.Duration.ofHours(1)) < 0) {
            log.warn(
                    "{}={} ms is under an hour: a delete is dropped once that old and no older generation is pending,"
                            + " but a value accepted by ingest and not sealed yet for longer would then come back;"
                            + " keep it far above rollout.seal.max.age.ms",
                    MergeConfig.DELETE_RETENTION_MS,
                    config.deleteRetention().toMillis());
        }
        ConfluentAvroDeserializer<GenerationSealed> events =
                new ConfluentAvroDeserializer<>(null, GenerationSealed.class);
        events.configure(config.serdeConfig(), false);
        ConfluentAvroSerializer<GenerationsMerged> mergedEvents = new ConfluentAvroSerializer<>();
        mergedEvents.configure(config.serdeConfig(), false);
        serve(
                "rollout-merge",
                MergeTopology.build(
                        config,
                        merges,
                        maintenance,
                        metrics,
                        partitionsOf(config),
                        events,
                        mergedEvents,
                        shadowPositions()),
                config);
        runtime().mountHealth(http(), Map::of); // /health is public: no paths in it
        new MergeAdminApi(runtime(), merges, config).mount(http());
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
        startServing();
        return this;
    }

    /** The round in flight commits (or is abandoned whole) while this instance still owns its shards. */
    @Override
    protected void beforeStreamsClose() {
        merges.close();
    }

    @Override
    protected void closeOwnParts() {
        merges.close();
        maintenance.close();
    }

    /** Runs until SIGTERM: {@code MergeApp [config.properties]}, env vars override the file. */
    public static void main(String[] args) throws InterruptedException {
        DirectBuffers.allocateUnzeroed(); // before any Netty class loads
        NativePreload.start(); // first: it overlaps the rest of the start
        MergeConfig config =
                MergeConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), System.getenv());
        StreamsRuntime.runUntilTerminated(new MergeApp(config).start(), "rollout-merge");
    }
}
