package dev.rolloutingest.ingest;

import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * An input partition's position in the changelogged progress store, committed in the same exactly-once transaction as
 * the input offsets and the GenerationSealed events: {@code sealed}, the first offset not yet in a durable generation.
 * Where processing stopped is the committed input offset itself ({@link PartitionBatcher}). A sealed position is also
 * told as the sealed lag.
 */
final class PartitionProgress {
    static final String SEALED = "sealed";
    /** The key of the position versions before 2026-12-07 stored per record; only removed now. */
    static final String PROCESSED = "processed";

    private final KeyValueStore<String, Long> store;
    private final String sealedKey;
    private final String processedKey;
    private final TopicPartition topicPartition;
    private final ObjLongConsumer<TopicPartition> sealedPositions;

    /**
     * @param keys the store keys' suffix: empty for the one input topic of a deployment configured with {@code
     *     rollout.input.topic} (the keys it always had), else the topic (a task holds a partition of each)
     */
    PartitionProgress(
            KeyValueStore<String, Long> store,
            String keys,
            TopicPartition topicPartition,
            ObjLongConsumer<TopicPartition> sealedPositions) {
        this.store = store;
        this.sealedKey = keys.isEmpty() ? SEALED : SEALED + ":" + keys;
        this.processedKey = keys.isEmpty() ? PROCESSED : PROCESSED + ":" + keys;
        this.topicPartition = topicPartition;
        this.sealedPositions = sealedPositions;
    }

    /** The committed sealed position at the task's start, told as the sealed lag; null before the first record. */
    Long restoreSealed() {
        Long sealed = store.get(sealedKey);
        if (sealed != null) {
            sealedPositions.accept(topicPartition, sealed);
        }
        return sealed;
    }

    /**
     * Removes the {@code processed} position versions before this one stored per record (the committed input offset
     * says the same): a store of a deployment upgraded from them keeps no stale copy.
     */
    void forgetProcessed() {
        if (store.get(processedKey) != null) {
            store.delete(processedKey);
        }
    }

    /** Everything below {@code next} is in an announced generation or the DLQ. */
    void sealedUpTo(long next) {
        store.put(sealedKey, next);
        sealedPositions.accept(topicPartition, next); // the sealed lag: standard tools show what is not in the table
    }
}
