package dev.rolloutingest.ingest;

import dev.rolloutingest.retry.Retry;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batches one input partition (one task, one MemWAL shard) into sealed generations, exactly once.
 *
 * <p>How nothing is lost or duplicated although Kafka Streams commits input offsets on its own
 * schedule: the changelogged progress store ({@link PartitionProgress}) holds {@code sealed} (the first offset not yet
 * in a durable generation), committed in the same exactly-once transaction as the input offsets and the
 * GenerationSealed events, so the committed input offset is where processing stopped. Buffered records are therefore
 * never the only copy: after a crash or rebalance, the new owner re-reads [sealed, committed offset) from the
 * input topic itself (Kafka is the log) before it goes on. A generation written but not announced before
 * the crash starts exactly at {@code sealed} and is adopted (its event emitted) instead of written again.
 * A fenced owner cannot commit its events or progress; its stray writes are generations whose content is
 * a deterministic function of their offsets, so they can never make a read wrong.
 *
 * <p>No record can hold a partition up: a record the table cannot represent is dead-lettered when it
 * arrives; and should a write still fail twice, the rows that make it fail are found (in memory, never
 * in the table), dead-lettered with the error, and the rest sealed ({@link SealWrite}).
 *
 * <p>Each batch holds the partition's rows routed to any number of tables ({@link RoutedBatch}); a seal writes one
 * generation per table for the batch's offset range, and the position moves only once all of them are written.
 *
 * <p>One per input partition; the Streams task's processor ({@link TaskBatchers}) hands it its records.
 *
 * <p>What the partition sends on (dead letters, GenerationSealed events) goes through {@link PartitionOutput}.
 *
 * <p>Over 300 lines because the partition's batch (its range, size, age and the write in flight) moves in one place:
 * accept a record, seal on a trigger, apply the finished write and move the committed position, recover after a
 * restart.
 */
final class PartitionBatcher {
    private static final Logger log = LoggerFactory.getLogger(PartitionBatcher.class);

    private final IngestConfig config;
    /** Read once: a config getter per record was ~1 % of the stream thread. */
    private final int sealMaxRows;

    private final long sealMaxBytes;
    private final long largeBlobLogBytes;
    private final Retry.Policy sealWriteRetry;
    private final TableCatalog tables;
    private final RecordCheck check;
    private final IngestMetrics metrics;
    private final InflightBudget budget;
    private final IngestHealth health;
    private final SealWriters writers;

    private final ProcessorContext<Object, Object> context;
    private final PartitionProgress progress;
    private final PartitionOutput output;
    private final String topic;
    private final int partition;
    private final TopicPartition topicPartition;
    private final String shard;
    private boolean recovered;
    private final PartitionRecovery recovery;

    private Long sealedUpTo;
    private long batchStart;
    private long lastOffset = -1;
    private RoutedBatch batch;
    private long batchBytes;
    private long batchStartedAtMs;
    private SealWrite inFlight;
    private final SealWrite.Target target;

    /** @param progressKeys the progress store keys' suffix ({@link PartitionProgress}) */
    PartitionBatcher(
            ProcessorContext<Object, Object> context,
            TopicPartition topicPartition,
            String progressKeys,
            IngestConfig config,
            TableCatalog tables,
            RecordCheck check,
            IngestMetrics metrics,
            InflightBudget budget,
            InputRereader rereader,
            IngestHealth health,
            IngestFaults faults,
            SealWriters writers,
            ObjLongConsumer<TopicPartition> sealedPositions) {
        this.config = config;
        this.sealMaxRows = config.sealMaxRows();
        this.sealMaxBytes = config.sealMaxBytes();
        this.largeBlobLogBytes = config.largeBlobLogBytes();
        this.sealWriteRetry =
                new Retry.Policy(config.sealWriteAttempts(), Duration.ofMillis(200), Duration.ofSeconds(10));
        this.tables = tables;
        this.check = check;
        this.metrics = metrics;
        this.budget = budget;
        this.health = health;
        this.writers = writers;
        this.context = context;
        this.progress = new PartitionProgress(
                context.getStateStore(IngestTopology.PROGRESS_STORE), progressKeys, topicPartition, sealedPositions);
        this.output = new PartitionOutput(context, topicPartition, tables, check, metrics, rereader, faults);
        this.topicPartition = topicPartition;
        this.topic = topicPartition.topic();
        this.partition = topicPartition.partition();
        this.shard = ShardId.of(topic, partition);
        this.sealedUpTo = progress.restoreSealed();
        this.batchStart = sealedUpTo == null ? 0 : sealedUpTo;
        this.recovered = false;
        this.recovery = new PartitionRecovery(tables, rereader, metrics, topicPartition);
        this.batch = new RoutedBatch(tables);
        this.target = new SealWrite.Target(topic, partition, metrics, health, faults, sealWriteRetry);
    }

    void process(Record<byte[], byte[]> record, long offset) {
        recoverOnce(offset);
        finishWrite(false);
        if (sealedUpTo == null) {
            // The first record this partition ever delivered: stored at once, or a crash before the first
            // seal would leave no position to re-read from.
            sealedUpTo = offset;
            batchStart = offset;
            progress.sealedUpTo(offset);
        }
        if (offset < sealedUpTo || offset <= lastOffset) {
            metrics.skippedReplay();
            return;
        }
        metrics.recordIn();
        accept(record.key(), record.value(), record.headers(), record.timestamp(), offset, true);
        if (batch.largestPartRows() >= sealMaxRows) {
            seal("rows");
        } else if (batchBytes >= sealMaxBytes) {
            seal("bytes");
        } else if (budget.over()) {
            // The largest buffer seals at its next check; this one seals now so the total stays bounded.
            metrics.pressure();
            TopicPartition largest = budget.requestLargest();
            log.info(
                    "Shard {} ({}/{}): in-flight budget of {} bytes reached ({} buffered); largest buffer is {}",
                    shard,
                    topic,
                    partition,
                    budget.limit(),
                    budget.total(),
                    largest);
            seal("pressure");
        }
    }

    /** Turns one input record into a row, or into a dead letter. {@code live} is false while re-reading. */
    private void accept(byte[] key, byte[] value, Headers headers, long timestamp, long offset, boolean live) {
        if (lastOffset < batchStart) {
            long now = context.currentSystemTimeMs();
            // A batch ages from its own first record. While the previous batch is still being written the
            // partition's health says "unsealed since" that batch's start, which is not this one's age (taken, every
            // batch under load aged from the first and sealed by age at each check, small). With no write in flight
            // the health's time is this batch's, or an earlier incarnation's whose seals failed (it keeps aging).
            batchStartedAtMs = inFlight != null ? now : health.buffering(topicPartition, now);
        }
        lastOffset = offset;
        RecordCheck.Result checked = check.accept(topic, key, value, headers, batch, partition, offset, Instant.now());
        DeadLetter dead = checked.deadLetter();
        if (dead != null) {
            // While re-reading, the dead letter was sent in the transaction that first processed the record.
            if (live) {
                output.deadLetter(key, value, headers, timestamp, offset, dead);
            }
            return;
        }
        int payload = checked.payloadBytes();
        if (live) {
            metrics.tableRow(checked.table());
        }
        if (live && value != null) {
            boolean large = largeBlobLogBytes > 0 && payload >= largeBlobLogBytes;
            metrics.blob(payload, large);
            if (large) {
                log.warn(
                        "Large payload: {} bytes (warn at {}) in experiment {} record_id {}",
                        payload,
                        largeBlobLogBytes,
                        batch.part(checked.table())
                                .experimentAt(batch.part(checked.table()).size() - 1),
                        checked.recordId());
            }
        }
        long bytes = (value == null ? 0 : value.length) + (key == null ? 0 : key.length);
        batchBytes += bytes;
        batch.added(checked.table(), bytes);
        budget.count(topicPartition, bytes);
    }

    void tick(long now) {
        check.deadLetterLog().flush();
        recoverOnce(UNKNOWN);
        finishWrite(false);
        if (sealedUpTo != null && lastOffset >= batchStart) {
            if (budget.sealRequested(topicPartition)) {
                seal("pressure");
            } else if (now - batchStartedAtMs >= config.sealMaxAgeMs()) {
                seal("age");
            }
        }
    }

    /**
     * Seals [batchStart, lastOffset]: hands the batch to a writer (unless every record of the range went to
     * the DLQ) and goes on filling the next one. One write per partition at a time: a second seal first
     * waits for the first write. When a write is done, the stream thread announces its generation and moves
     * the committed position ({@link #finishWrite}); until then the range is re-read after a crash, and a
     * generation written but not announced is adopted.
     */
    private void seal(String trigger) {
        seal(trigger, Map.of());
    }

    /** @param adopting generations of the range written before a restart, announced instead of written again */
    private void seal(String trigger, Map<String, SealWrite.Written> adopting) {
        if (sealedUpTo == null || lastOffset < batchStart) {
            return;
        }
        finishWrite(true);
        long first = batchStart;
        long last = lastOffset;
        if (batch.isEmpty() && adopting.isEmpty()) {
            metrics.seal(trigger, "empty", Duration.ZERO);
            budget.release(topicPartition, batchBytes);
            batchBytes = 0;
            batchStart = last + 1;
            advanceTo(last + 1);
            return;
        }
        SealWrite write = new SealWrite(target, first, last, trigger, batch, batchBytes, adopting);
        batch = new RoutedBatch(tables);
        batchBytes = 0;
        batchStart = last + 1;
        inFlight = write;
        write.result = writers.submit(write::writeAll);
        finishWrite(false); // written already when writes run on this thread
    }

    /**
     * Applies the partition's finished write: dead-letters the rows the table refused, announces the
     * generation and moves the committed position. {@code wait}: block until the write is done.
     */
    private void finishWrite(boolean wait) {
        SealWrite write = inFlight;
        if (write == null || (!wait && !write.result.isDone())) {
            return;
        }
        inFlight = null;
        List<SealWrite.Written> sealed;
        try {
            sealed = write.result.get();
        } catch (ExecutionException e) {
            write.batches.close();
            metrics.seal(write.trigger, "failure", Duration.ofNanos(System.nanoTime() - write.startedNanos));
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            inFlight = write;
            throw new IllegalStateException("Interrupted while waiting for a generation write", e);
        }
        write.batches.close();
        output.written(write, sealed);
        budget.release(topicPartition, write.bytes);
        advanceTo(write.last + 1);
    }

    /** The committed position: everything below {@code next} is in an announced generation or the DLQ. */
    private void advanceTo(long next) {
        sealedUpTo = next;
        progress.sealedUpTo(next);
        if (batchStart < next) {
            batchStart = next;
        }
        if (lastOffset < next - 1) {
            lastOffset = next - 1;
        }
        health.sealed(topicPartition);
        if (lastOffset >= batchStart) {
            health.buffering(topicPartition, batchStartedAtMs); // the next batch's records wait since then
        }
    }

    /** The first offset Streams delivers after a start is not known yet: recovery asks for the committed offset. */
    private static final long UNKNOWN = -1;

    /**
     * Once per task start: see {@link PartitionRecovery}. A seal cut short by the restart (generations written, not
     * announced, maybe not in every table of its rows) is completed first: its range is read again, the tables that
     * have their generation keep it, the others get theirs, then all are announced. Records of the range at or beyond
     * the committed input offset were never processed in a committed transaction: their dead letters are sent now.
     *
     * <p>Where processing stopped is the input offset the application's group committed with the last transaction:
     * Streams resumes there, so the first record it delivers ({@code delivered}) marks it (only transaction markers or
     * aborted records lie between the two); before any record, the committed offset is asked for. No position of its
     * own is kept per record (a store put per record was ~5 % of the stream thread, and Streams' store code a sixth of
     * the JIT's work while a cold JVM drains a backlog).
     */
    private void recoverOnce(long delivered) {
        if (recovered) {
            return;
        }
        if (sealedUpTo == null) {
            recovered = true;
            return;
        }
        long processed;
        if (delivered != UNKNOWN) {
            processed = delivered;
        } else {
            OptionalLong committed;
            try {
                committed = recovery.committedOffset();
            } catch (RuntimeException e) {
                log.warn(
                        "Shard {} ({}): the committed input offset is unknown, recovery retries: {}",
                        shard,
                        topicPartition,
                        e.toString());
                return;
            }
            processed = committed.orElse(sealedUpTo);
        }
        recovered = true;
        progress.forgetProcessed();
        Map<String, SealWrite.Written> orphans;
        while (!(orphans = recovery.orphansAt(sealedUpTo)).isEmpty()) {
            long last = orphans.values().stream()
                    .mapToLong(w -> w.generation().lastOffset())
                    .min()
                    .getAsLong();
            long from = sealedUpTo;
            recovery.rereadUnsealed(from, last + 1, record -> {
                if (record.offset() > lastOffset) {
                    boolean live = record.offset() >= processed;
                    accept(record.key(), record.value(), record.headers(), record.timestamp(), record.offset(), live);
                }
            });
            lastOffset = Math.max(lastOffset, last);
            seal("recovery", orphans);
            finishWrite(true);
        }
        if (processed <= sealedUpTo) {
            return;
        }
        recovery.rereadUnsealed(sealedUpTo, processed, record -> {
            if (record.offset() > lastOffset) {
                accept(record.key(), record.value(), record.headers(), record.timestamp(), record.offset(), false);
            }
        });
        // Offsets between the last record and `processed` (transaction markers) belong to the batch too.
        lastOffset = Math.max(lastOffset, processed - 1);
    }

    void close() {
        SealWrite write = inFlight;
        if (write != null) {
            // Not announced here: the next owner of the partition adopts the generation (or writes it again).
            try {
                write.result.get(60, TimeUnit.SECONDS);
                write.batches.close();
            } catch (TimeoutException e) {
                log.warn(
                        "Shard {}: a generation write still runs at close; its batch's memory is left to the writer",
                        shard);
            } catch (ExecutionException e) {
                write.batches.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        budget.release(topicPartition);
        health.closed(topicPartition);
        if (batch != null) {
            batch.close();
        }
    }
}
