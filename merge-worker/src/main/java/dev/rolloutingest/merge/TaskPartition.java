package dev.rolloutingest.merge;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

/**
 * The partition of the events topic an events task reads, and the keys Kafka's own partitioner puts there: a shard no
 * event brought to any task, and a table's upkeep (keyed by its name), so instances share them out.
 */
record TaskPartition(int partition, int eventPartitions) {
    /** Whether Kafka's partitioner puts a record keyed {@code key} in this task's partition of the events topic. */
    boolean owns(String key) {
        return BuiltInPartitioner.partitionForKey(key.getBytes(StandardCharsets.UTF_8), eventPartitions) == partition;
    }
}
