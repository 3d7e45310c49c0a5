package dev.rolloutingest.ingest;

import dev.rolloutingest.retry.Retry;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.generations.SealedGeneration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Future;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One sealed batch of a partition being written as generations, one per table its rows were routed to, all for the
 * same offset range, off the stream thread. Each table's generation is retried with backoff;
 * from the second attempt a failure tells the data's fault from the store's, and rows that fail on their own
 * leave the batch for the dead-letter topic (found by writing to memory, halving down to single rows) while the
 * rest is written. The stream thread applies the outcome ({@link PartitionBatcher}, {@link PartitionOutput}).
 */
final class SealWrite {
    // the partition's logger: a seal's lines read in order with the batcher's, under one name operators filter on
    private static final Logger log = LoggerFactory.getLogger(PartitionBatcher.class);

    /** Where a partition's batches go and what watches them: one per input partition. */
    record Target(
            String topic,
            int partition,
            IngestMetrics metrics,
            IngestHealth health,
            IngestFaults faults,
            Retry.Policy sealWriteRetry) {
        String shard() {
            return ShardId.of(topic, partition);
        }

        TopicPartition topicPartition() {
            return new TopicPartition(topic, partition);
        }
    }

    /** A generation written, with the table it belongs to. */
    record Written(String table, String tableUri, SealedGeneration generation) {}

    private final Target target;
    final long first;
    final long last;
    final String trigger;
    final long startedNanos = System.nanoTime();
    final long bytes;
    /** Rows refused by the write of a table that got no generation (a generation's seal names its own). */
    final List<SealedGeneration.DeadLettered> refused = new ArrayList<>();
    /** Generations of the range written before a restart, by table: announced as they are, not written again. */
    private final Map<String, Written> adopting;

    final RoutedBatch batches;
    private String tableName; // the table being written
    private RolloutTable table;
    private GenerationBatch part; // its rows
    private List<SealedGeneration.DeadLettered> tableRefused; // its rows refused by the write
    private GenerationBatch batch; // the rows being written: the part, or what is left of it when rows are taken out
    Future<List<Written>> result;

    SealWrite(
            Target target,
            long first,
            long last,
            String trigger,
            RoutedBatch batches,
            long bytes,
            Map<String, Written> adopting) {
        this.adopting = adopting;
        this.target = target;
        this.first = first;
        this.last = last;
        this.trigger = trigger;
        this.batches = batches;
        this.bytes = bytes;
    }

    /**
     * Writes each table's rows as a generation, one table after the other; runs on a writer thread. A table whose
     * rows were all refused gets none. A generation of the range that exists already (written before a restart) is
     * taken as it is.
     */
    List<Written> writeAll() {
        List<Written> written = new ArrayList<>(adopting.values());
        target.faults().generationWriteStarting();
        for (Map.Entry<String, GenerationBatch> entry : batches.parts().entrySet()) {
            tableName = entry.getKey();
            table = batches.table(tableName);
            if (adopting.containsKey(tableName)) {
                continue;
            }
            part = entry.getValue();
            batch = part;
            tableRefused = new ArrayList<>();
            try {
                Optional<SealedGeneration> generation = writeWithRetries();
                if (generation.isPresent()) {
                    written.add(new Written(
                            tableName, table.location().uri(), generation.get())); // its seal names its refused
                    target.faults().afterTableGeneration();
                } else {
                    refused.addAll(tableRefused);
                }
            } finally {
                if (batch != part) {
                    batch.close(); // what was left after rows were taken out
                }
            }
        }
        return written;
    }

    /** Writes the table's rows as a generation, retrying with backoff. Empty when every row was refused. */
    private Optional<SealedGeneration> writeWithRetries() {
        try {
            return Retry.run(
                    target.sealWriteRetry(),
                    e -> e instanceof RuntimeException,
                    (attempt, e, backoff) -> log.warn(
                            "Table {} shard {}: writing generation {} failed (attempt {}/{}), retrying in {} ms: {}",
                            table.location(),
                            target.shard(),
                            last + 1,
                            attempt,
                            target.sealWriteRetry().attempts(),
                            backoff.toMillis(),
                            e.getMessage()),
                    attempt -> writeOnce(attempt >= 2));
        } catch (Retry.Exhausted e) {
            throw new IllegalStateException(
                    "Table " + table.location() + " shard " + target.shard() + ": writing generation "
                            + (last + 1) + " failed " + e.attempts() + " times: "
                            + e.last().getMessage(),
                    e.last());
        } catch (InterruptedException e) {
            throw new IllegalStateException("Interrupted while retrying a generation write", e);
        }
    }

    /**
     * One attempt. With {@code probe} (from the second attempt on) a failure first tells the data's fault from
     * the store's: rows that fail on their own are taken out (into the write's refused list) and the rest is
     * written at once.
     */
    private Optional<SealedGeneration> writeOnce(boolean probe) {
        while (!batch.isEmpty()) {
            try {
                return Optional.of(table.generations()
                        .write(
                                target.topic(),
                                target.partition(),
                                first,
                                last,
                                batch,
                                batches.bytes(tableName),
                                tableRefused));
            } catch (RuntimeException e) {
                if (probe && takeOutUnwritableRows()) {
                    continue;
                }
                target.metrics().sealFailure("storage");
                target.health().sealFailed(target.topicPartition(), e.getMessage(), System.currentTimeMillis());
                throw e;
            }
        }
        return Optional.empty();
    }

    /** True when rows of the batch fail a write on their own; they leave the batch for the refused list. */
    private boolean takeOutUnwritableRows() {
        long generation = last + 1;
        Map<Long, String> unwritable = table.generations().findUnwritableRows(batch);
        if (unwritable.isEmpty()) {
            return false;
        }
        target.metrics().sealFailure("data");
        unwritable.forEach((offset, error) -> {
            log.warn(
                    "Shard {} generation {}: the record at {}/{}@{} cannot be written and goes to the DLQ: {}",
                    target.shard(),
                    generation,
                    target.topic(),
                    target.partition(),
                    offset,
                    error);
            tableRefused.add(new SealedGeneration.DeadLettered(offset, "unwritable", error));
        });
        GenerationBatch rest = batch.without(unwritable.keySet());
        if (batch != part) {
            batch.close(); // an earlier remainder; the part itself is closed with the batches
        }
        batch = rest;
        return true;
    }
}
