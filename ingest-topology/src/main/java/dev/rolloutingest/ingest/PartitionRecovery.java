package dev.rolloutingest.ingest;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.SealedGeneration;
import java.util.Optional;
import java.util.function.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A partition's restart, once per task start. Kafka is the log: generations written but not announced before
 * the restart are adopted (announced, not written again), then the records processed but not yet sealed are
 * read again from the input topic, so the partition's buffer is what it was. What adopting a generation and
 * taking a record back mean is the processor's ({@link PartitionBatcher}); finding them is this class's.
 */
final class PartitionRecovery {
    private static final Logger log = LoggerFactory.getLogger(PartitionRecovery.class);

    private final RolloutTable table;
    private final InputRereader rereader;
    private final IngestMetrics metrics;
    private final TopicPartition partition;
    private final String shard;

    PartitionRecovery(RolloutTable table, InputRereader rereader, IngestMetrics metrics, TopicPartition partition) {
        this.table = table;
        this.rereader = rereader;
        this.metrics = metrics;
        this.partition = partition;
        this.shard = ShardId.of(partition.topic(), partition.partition());
    }

    /**
     * Hands every generation written but not announced, from {@code sealed} (the first offset not in an
     * announced generation) on, to {@code adopt} in offset order.
     */
    void adoptOrphans(long sealed, Consumer<SealedGeneration> adopt) {
        long next = sealed;
        Optional<SealedGeneration> orphan;
        while ((orphan = table.sealedStartingAt(shard, next)).isPresent()) {
            SealedGeneration generation = orphan.get();
            log.info(
                    "Shard {} ({}): adopting generation {} [{}..{}] written before a restart",
                    shard,
                    partition,
                    generation.generation(),
                    generation.firstOffset(),
                    generation.lastOffset());
            adopt.accept(generation);
            metrics.adopted();
            next = generation.lastOffset() + 1;
        }
    }

    /**
     * Reads the records processed but not sealed before the restart, [sealed, processed), from the input topic
     * into {@code takeBack}, in offset order.
     */
    void rereadUnsealed(long sealed, long processed, InputRereader.Handler takeBack) {
        long started = System.nanoTime();
        int reread = rereader.reread(partition, sealed, processed, takeBack);
        log.info(
                "Shard {} ({}): re-read {} unsealed records [{}..{}) from the input topic in {} ms",
                shard,
                partition,
                reread,
                sealed,
                processed,
                (System.nanoTime() - started) / 1_000_000);
    }
}
