package dev.rolloutingest.merge;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.Topology;

/**
 * The merge-worker topology, built by a function the app and the tests share:
 * <pre>
 * rollout-generations -> scheduler [backlog store, cooldown store] -> rollout-merges
 * </pre>
 */
final class MergeTopology {
    static final String SOURCE = "generations-source";
    static final String SCHEDULER = "scheduler";
    static final String SINK = "merges-sink";

    private MergeTopology() {}

    /** @param mergedPositions told, per input partition, the first offset not yet in the base table */
    static Topology build(
            MergeConfig config,
            MergeTables tables,
            TableMaintenanceRunner maintenance,
            MergeMetrics metrics,
            int eventPartitions,
            Deserializer<GenerationSealed> events,
            Serializer<GenerationsMerged> merges,
            ObjLongConsumer<TopicPartition> mergedPositions) {
        Topology topology = new Topology();
        topology.addSource(
                Topology.AutoOffsetReset.EARLIEST, SOURCE, new StringDeserializer(), events, config.generationsTopic());
        topology.addProcessor(
                SCHEDULER,
                () -> new MergeScheduler(config, tables, maintenance, metrics, eventPartitions, mergedPositions),
                SOURCE);
        MergeStores.addTo(topology, SCHEDULER);
        topology.addSink(SINK, config.mergesTopic(), new StringSerializer(), merges, SCHEDULER);
        return topology;
    }
}
