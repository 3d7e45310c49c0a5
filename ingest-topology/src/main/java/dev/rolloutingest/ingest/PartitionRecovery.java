package dev.rolloutingest.ingest;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A partition's restart, once per task start. Kafka is the log: generations written but not announced before
 * the restart are adopted (announced, not written again; the tables their seal did not reach yet get theirs from
 * the range read again), then the records processed but not yet sealed are read again from the input topic, so the
 * partition's buffer is what it was. What adopting a generation and
 * taking a record back mean is the processor's ({@link PartitionBatcher}); finding them is this class's.
 */
final class PartitionRecovery {
    private static final Logger log = LoggerFactory.getLogger(PartitionRecovery.class);

    private final TableCatalog tables;
    private final InputRereader rereader;
    private final IngestMetrics metrics;
    private final TopicPartition partition;
    private final String shard;

    PartitionRecovery(TableCatalog tables, InputRereader rereader, IngestMetrics metrics, TopicPartition partition) {
        this.tables = tables;
        this.rereader = rereader;
        this.metrics = metrics;
        this.partition = partition;
        this.shard = ShardId.of(partition.topic(), partition.partition());
    }

    /** The input offset the application committed for the partition: where processing stopped before the start. */
    OptionalLong committedOffset() {
        return rereader.committedOffset(partition);
    }

    /**
     * The generations written but not announced that start at {@code sealed} (the first offset not in an announced
     * generation), by table: one seal writes a generation per table of its rows, all for the same range, and a
     * restart may have cut it short after some of them.
     */
    Map<String, SealWrite.Written> orphansAt(long sealed) {
        Map<String, SealWrite.Written> orphans = new TreeMap<>();
        for (String name : tables.withSealStartingAt(shard, sealed)) { // opens only the tables that have one
            Optional<RolloutTable> table = tables.open(name);
            if (table.isEmpty()) {
                continue;
            }
            Optional<SealedGeneration> orphan = table.get().generations().startingAt(shard, sealed);
            if (orphan.isPresent()) {
                SealedGeneration generation = orphan.get();
                log.info(
                        "Shard {} ({}): adopting generation {} [{}..{}] of table {} written before a restart",
                        shard,
                        partition,
                        generation.generation(),
                        generation.firstOffset(),
                        generation.lastOffset(),
                        name);
                metrics.adopted();
                orphans.put(
                        name, new SealWrite.Written(name, table.get().location().uri(), generation));
            }
        }
        return orphans;
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
