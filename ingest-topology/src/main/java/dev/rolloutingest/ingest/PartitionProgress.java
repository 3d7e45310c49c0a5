package dev.rolloutingest.ingest;

import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * An input partition's positions in the changelogged progress store, committed in the same exactly-once transaction as
 * the input offsets and the GenerationSealed events: {@code sealed}, the first offset not yet in a durable generation,
 * and {@code processed}, the next offset to process. A sealed position is also told as the sealed lag.
 */
final class PartitionProgress {
    static final String SEALED = "sealed";
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

    /** The committed processed position; null when none was stored. */
    Long processed() {
        return store.get(processedKey);
    }

    /** Everything below {@code next} is in an announced generation or the DLQ. */
    void sealedUpTo(long next) {
        store.put(sealedKey, next);
        sealedPositions.accept(topicPartition, next); // the sealed lag: standard tools show what is not in the table
    }

    void processedUpTo(long next) {
        store.put(processedKey, next);
    }
}
