package dev.rolloutingest.ingest;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The processor of one Streams task. With several input topics a task holds the partitions of one number across
 * them (Streams groups a source's topics by partition), so each record goes to the {@link PartitionBatcher} of its
 * own input partition: one per topic-partition, one MemWAL shard each, with progress keys of its own.
 */
final class TaskBatchers implements Processor<byte[], byte[], Object, Object> {
    /** Makes the batcher of an input partition: (context, partition, progress key suffix). */
    interface Factory {
        PartitionBatcher create(ProcessorContext<Object, Object> context, TopicPartition partition, String keys);
    }

    /** The one input topic of {@code rollout.input.topic}, or null when there are several. */
    private final String oneTopic;

    private final long checkIntervalMs;
    private final Factory factory;
    private final Map<TopicPartition, PartitionBatcher> batchers = new HashMap<>();
    private ProcessorContext<Object, Object> context;

    /**
     * @param oneTopic the one topic of {@code rollout.input.topic} when the deployment reads that alone (its progress
     *     keys stay the ones it always had, "sealed" and "processed", so its positions survive the upgrade), else null
     */
    TaskBatchers(String oneTopic, long checkIntervalMs, Factory factory) {
        this.oneTopic = oneTopic;
        this.checkIntervalMs = checkIntervalMs;
        this.factory = factory;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
        this.context = context;
        // The partitions with a position: their unsealed records are read again at the first check, even when no new
        // record of theirs arrives.
        KeyValueStore<String, Long> progress = context.getStateStore(IngestTopology.PROGRESS_STORE);
        try (KeyValueIterator<String, Long> all = progress.all()) {
            all.forEachRemaining(kv -> {
                String topic = topicOfKey(kv.key);
                if (topic != null) {
                    batcher(new TopicPartition(topic, context.taskId().partition()));
                }
            });
        }
        context.schedule(Duration.ofMillis(checkIntervalMs), PunctuationType.WALL_CLOCK_TIME, now -> {
            for (PartitionBatcher batcher : batchers.values()) {
                batcher.tick(now);
            }
        });
    }

    /** The topic a progress key's "sealed" position belongs to, or null for other keys. */
    private String topicOfKey(String key) {
        if (oneTopic != null) {
            return key.equals(PartitionProgress.SEALED) ? oneTopic : null;
        }
        String prefix = PartitionProgress.SEALED + ":";
        return key.startsWith(prefix) ? key.substring(prefix.length()) : null;
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        RecordMetadata metadata = context.recordMetadata().orElseThrow();
        batcher(new TopicPartition(metadata.topic(), metadata.partition())).process(record, metadata.offset());
    }

    private PartitionBatcher batcher(TopicPartition partition) {
        return batchers.computeIfAbsent(
                partition, tp -> factory.create(context, tp, oneTopic != null ? "" : tp.topic()));
    }

    @Override
    public void close() {
        batchers.values().forEach(PartitionBatcher::close);
        batchers.clear();
    }
}
