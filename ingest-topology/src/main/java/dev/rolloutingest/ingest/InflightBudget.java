package dev.rolloutingest.ingest;

import dev.rolloutingest.table.MemoryBudget;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;

/**
 * Bytes buffered for sealing across every partition of this instance (ROLLOUT_MAX_INFLIGHT_BLOB_BYTES), a
 * {@link MemoryBudget} counted per partition. Over the limit the largest buffer is asked to seal early (it does at its
 * next record or check), and the buffer that crossed the limit seals at once, so the total never exceeds limit + one
 * record.
 */
final class InflightBudget {
    private final MemoryBudget buffered;
    private final Map<TopicPartition, Long> bytesByPartition = new HashMap<>();
    private final Set<TopicPartition> sealRequests = new HashSet<>();

    /** @param limit bytes; 0 = no limit */
    public InflightBudget(long limit) {
        this.buffered = MemoryBudget.boundedUnlessZero(IngestConfig.MAX_INFLIGHT_BLOB_BYTES, limit);
    }

    /** A record's bytes, buffered already: counted whatever the limit, the early seals bring the total back. */
    public synchronized void count(TopicPartition partition, long bytes) {
        bytesByPartition.merge(partition, bytes, Long::sum);
        buffered.count(bytes);
    }

    /** Part of a partition's bytes left memory (a batch written while the next one fills). */
    public synchronized void release(TopicPartition partition, long bytes) {
        Long held = bytesByPartition.get(partition);
        if (held == null) {
            return;
        }
        long released = Math.min(held, bytes);
        if (held - released == 0) {
            bytesByPartition.remove(partition);
        } else {
            bytesByPartition.put(partition, held - released);
        }
        buffered.release(released);
        sealRequests.remove(partition);
    }

    public synchronized void release(TopicPartition partition) {
        Long bytes = bytesByPartition.remove(partition);
        if (bytes != null) {
            buffered.release(bytes);
        }
        sealRequests.remove(partition);
    }

    public long total() {
        return buffered.used();
    }

    public long limit() {
        return buffered.limit();
    }

    public boolean over() {
        return buffered.over();
    }

    /** Asks the largest buffer to seal; returns its partition. */
    public synchronized TopicPartition requestLargest() {
        TopicPartition largest = null;
        long max = -1;
        for (Map.Entry<TopicPartition, Long> e : bytesByPartition.entrySet()) {
            if (e.getValue() > max) {
                max = e.getValue();
                largest = e.getKey();
            }
        }
        if (largest != null) {
            sealRequests.add(largest);
        }
        return largest;
    }

    public synchronized boolean sealRequested(TopicPartition partition) {
        return sealRequests.contains(partition);
    }
}
