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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One sealed batch of a partition being written as a generation, off the stream thread: retried with backoff;
 * from the second attempt a failure tells the data's fault from the store's, and rows that fail on their own
 * leave the batch for the dead-letter topic (found by writing to memory, halving down to single rows) while the
 * rest is written. The stream thread applies the outcome ({@link PartitionBatcher}).
 */
final class SealWrite {
    // the partition's logger: a seal's lines read in order with the batcher's, under one name operators filter on
    private static final Logger log = LoggerFactory.getLogger(PartitionBatcher.class);

    /** Where a partition's batches go and what watches them: one per partition task. */
    record Target(
            RolloutTable table,
            String topic,
            int partition,
            IngestMetrics metrics,
            IngestHealth health,
            IngestFaults faults,
            Retry.Policy sealWriteRetry) {
        String shard() {
            return ShardId.of(topic, partition);
        }
    }

    private final Target target;
    final long first;
    final long last;
    final String trigger;
    final long startedNanos = System.nanoTime();
    final long bytes;
    final List<SealedGeneration.DeadLettered> refused = new ArrayList<>();
    GenerationBatch batch; // replaced when rows are taken out
    Future<Optional<SealedGeneration>> result;

    SealWrite(Target target, long first, long last, String trigger, GenerationBatch batch, long bytes) {
        this.target = target;
        this.first = first;
        this.last = last;
        this.trigger = trigger;
        this.batch = batch;
        this.bytes = bytes;
    }

    /**
     * Writes a batch as a generation, retrying with backoff; runs on a writer thread. Empty when every row
     * was refused.
     */
    Optional<SealedGeneration> writeWithRetries() {
        target.faults().generationWriteStarting();
        try {
            return Retry.run(
                    target.sealWriteRetry(),
                    e -> e instanceof RuntimeException,
                    (attempt, e, backoff) -> log.warn(
                            "Table {} shard {}: writing generation {} failed (attempt {}/{}), retrying in {} ms: {}",
                            target.table().location(),
                            target.shard(),
                            last + 1,
                            attempt,
                            target.sealWriteRetry().attempts(),
                            backoff.toMillis(),
                            e.getMessage()),
                    attempt -> writeOnce(attempt >= 2));
        } catch (Retry.Exhausted e) {
            throw new IllegalStateException(
                    "Table " + target.table().location() + " shard " + target.shard() + ": writing generation "
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
                return Optional.of(target.table()
                        .writeGeneration(target.topic(), target.partition(), first, last, batch, bytes, refused));
            } catch (RuntimeException e) {
                if (probe && takeOutUnwritableRows()) {
                    continue;
                }
                target.metrics().sealFailure("storage");
                target.health().sealFailed(target.partition(), e.getMessage(), System.currentTimeMillis());
                throw e;
            }
        }
        return Optional.empty();
    }

    /** True when rows of the batch fail a write on their own; they leave the batch for the refused list. */
    private boolean takeOutUnwritableRows() {
        long generation = last + 1;
        Map<Long, String> unwritable = target.table().findUnwritableRows(batch);
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
            refused.add(new SealedGeneration.DeadLettered(offset, "unwritable", error));
        });
        GenerationBatch rest = batch.without(unwritable.keySet());
        batch.close();
        batch = rest;
        return true;
    }
}
