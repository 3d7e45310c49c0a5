package dev.rolloutingest.ingest;

import dev.rolloutingest.retry.Retry;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.generations.SealedGeneration;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batches one input partition (one task, one MemWAL shard) into sealed generations, exactly once.
 *
 * <p>How nothing is lost or duplicated although Kafka Streams commits input offsets on its own
 * schedule: the changelogged progress store holds {@code sealed} (the first offset not yet in a durable
 * generation) and {@code processed} (the next offset to process), committed in the same exactly-once
 * transaction as the input offsets and the GenerationSealed events. Buffered records are therefore
 * never the only copy: after a crash or rebalance, the new owner re-reads [sealed, processed) from the
 * input topic itself (Kafka is the log) before it goes on. A generation written but not announced before
 * the crash starts exactly at {@code sealed} and is adopted (its event emitted) instead of written again.
 * A fenced owner cannot commit its events or progress; its stray writes are generations whose content is
 * a deterministic function of their offsets, so they can never make a read wrong.
 *
 * <p>No record can hold a partition up: a record the table cannot represent is dead-lettered when it
 * arrives; and should a write still fail twice, the rows that make it fail are found (in memory, never
 * in the table), dead-lettered with the error, and the rest sealed ({@link SealWrite}).
 *
 * <p>Over 300 lines because the partition's state moves in one place: accept a record, seal on a trigger, apply
 * the finished write (dead letters, announcement, committed position), recover after a restart.
 */
final class PartitionBatcher implements Processor<byte[], byte[], Object, Object> {
    private static final Logger log = LoggerFactory.getLogger(PartitionBatcher.class);
    static final String SEALED = "sealed";
    static final String PROCESSED = "processed";

    private final IngestConfig config;
    /** Read once: a config getter per record was ~1 % of the stream thread. */
    private final int sealMaxRows;

    private final long sealMaxBytes;
    private final long largeBlobLogBytes;
    private final Retry.Policy sealWriteRetry;
    private final RolloutTable table;
    private final RecordCheck check;
    private final IngestMetrics metrics;
    private final InflightBudget budget;
    private final InputRereader rereader;
    private final IngestHealth health;
    private final IngestFaults faults;
    private final SealWriters writers;
    private final ObjLongConsumer<TopicPartition> sealedPositions;

    private ProcessorContext<Object, Object> context;
    private KeyValueStore<String, Long> progress;
    private String topic;
    private int partition;
    private TopicPartition topicPartition;
    private String shard;
    private boolean recovered;
    private PartitionRecovery recovery;

    private Long sealedUpTo;
    private long batchStart;
    private long lastOffset = -1;
    private GenerationBatch batch;
    private long batchBytes;
    private long batchStartedAtMs;
    private SealWrite inFlight;
    private SealWrite.Target target;

    PartitionBatcher(
            IngestConfig config,
            RolloutTable table,
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
        this.table = table;
        this.check = check;
        this.metrics = metrics;
        this.budget = budget;
        this.rereader = rereader;
        this.health = health;
        this.faults = faults;
        this.writers = writers;
        this.sealedPositions = sealedPositions;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
        this.context = context;
        this.progress = context.getStateStore(IngestTopology.PROGRESS_STORE);
        this.topic = config.inputTopic();
        this.partition = context.taskId().partition();
        this.topicPartition = new TopicPartition(topic, partition);
        this.shard = ShardId.of(topic, partition);
        this.sealedUpTo = progress.get(SEALED);
        this.batchStart = sealedUpTo == null ? 0 : sealedUpTo;
        this.recovered = false;
        this.recovery = new PartitionRecovery(table, rereader, metrics, topicPartition);
        this.batch = table.newBatch();
        this.target = new SealWrite.Target(table, topic, partition, metrics, health, faults, sealWriteRetry);
        if (sealedUpTo != null) {
            sealedPositions.accept(topicPartition, sealedUpTo);
        }
        context.schedule(Duration.ofMillis(config.sealCheckIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::tick);
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        recoverOnce();
        RecordMetadata metadata = context.recordMetadata().orElseThrow();
        long offset = metadata.offset();
        finishWrite(false);
        if (sealedUpTo == null) {
            // The first record this partition ever delivered: stored at once, or a crash before the first
            // seal would leave no position to re-read from.
            sealedUpTo = offset;
            batchStart = offset;
            progress.put(SEALED, offset);
            sealedPositions.accept(topicPartition, offset);
        }
        if (offset < sealedUpTo || offset <= lastOffset) {
            metrics.skippedReplay();
            return;
        }
        metrics.recordIn();
        accept(record.key(), record.value(), record.headers(), record.timestamp(), offset, true);
        progress.put(PROCESSED, offset + 1);
        if (batch.size() >= sealMaxRows) {
            seal("rows");
        } else if (batchBytes >= sealMaxBytes) {
            seal("bytes");
        } else if (budget.over()) {
            // The largest buffer seals at its next check; this one seals now so the total stays bounded.
            metrics.pressure();
            int largest = budget.requestLargest();
            log.info(
                    "Shard {} ({}/{}): in-flight budget of {} bytes reached ({} buffered); largest buffer is partition {}",
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
            batchStartedAtMs = inFlight != null ? now : health.buffering(partition, now);
        }
        lastOffset = offset;
        RecordCheck.Result checked = check.accept(key, value, batch, partition, offset, Instant.now());
        DeadLetter dead = checked.deadLetter();
        if (dead != null) {
            // While re-reading, the dead letter was sent in the transaction that first processed the record.
            if (live) {
                deadLetter(key, value, headers, timestamp, offset, dead);
            }
            return;
        }
        int payload = checked.payloadBytes();
        if (live && value != null) {
            boolean large = largeBlobLogBytes > 0 && payload >= largeBlobLogBytes;
            metrics.blob(payload, large);
            if (large) {
                log.warn(
                        "Large payload: {} bytes (warn at {}) in experiment {} record_id {}",
                        payload,
                        largeBlobLogBytes,
                        batch.experimentAt(batch.size() - 1),
                        checked.recordId());
            }
        }
        long bytes = (value == null ? 0 : value.length) + (key == null ? 0 : key.length);
        batchBytes += bytes;
        budget.add(partition, bytes);
    }

    private void deadLetter(byte[] key, byte[] value, Headers headers, long timestamp, long offset, DeadLetter dead) {
        metrics.dlq(dead.reason());
        check.deadLetterLog()
                .deadLettered(
                        dead.reason(),
                        () -> "Shard " + shard + ": " + topic + "/" + partition + "@" + offset + " to the DLQ ("
                                + dead.reason() + "): " + dead.error());
        context.forward(
                new Record<Object, Object>(key, value, timestamp, dead.headers(headers, topic, partition, offset)),
                IngestTopology.DLQ_SINK);
    }

    private void tick(long now) {
        check.deadLetterLog().flush();
        recoverOnce();
        finishWrite(false);
        if (sealedUpTo != null && lastOffset >= batchStart) {
            if (budget.sealRequested(partition)) {
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
        if (sealedUpTo == null || lastOffset < batchStart) {
            return;
        }
        finishWrite(true);
        long first = batchStart;
        long last = lastOffset;
        if (batch.isEmpty()) {
            metrics.seal(trigger, "empty", Duration.ZERO);
            budget.release(partition, batchBytes);
            batchBytes = 0;
            batchStart = last + 1;
            advanceTo(last + 1);
            return;
        }
        SealWrite write = new SealWrite(target, first, last, trigger, batch, batchBytes);
        batch = table.newBatch();
        batchBytes = 0;
        batchStart = last + 1;
        inFlight = write;
        write.result = writers.submit(write::writeWithRetries);
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
        Optional<SealedGeneration> sealed;
        try {
            sealed = write.result.get();
        } catch (ExecutionException e) {
            write.batch.close();
            metrics.seal(write.trigger, "failure", Duration.ofNanos(System.nanoTime() - write.startedNanos));
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            inFlight = write;
            throw new IllegalStateException("Interrupted while waiting for a generation write", e);
        }
        write.batch.close();
        deadLetterRefused(write.refused);
        long millis = (System.nanoTime() - write.startedNanos) / 1_000_000;
        if (sealed.isPresent()) {
            faults.afterGenerationWrite();
            announce(sealed.get());
            metrics.seal(write.trigger, "success", Duration.ofNanos(System.nanoTime() - write.startedNanos));
            log.info(
                    "Shard {} ({}/{}): sealed generation {} [{}..{}] {} rows, {} bytes ({}) in {} ms",
                    shard,
                    topic,
                    partition,
                    sealed.get().generation(),
                    write.first,
                    write.last,
                    sealed.get().rows(),
                    sealed.get().bytes(),
                    write.trigger,
                    millis);
        } else {
            metrics.seal(write.trigger, "empty", Duration.ofNanos(System.nanoTime() - write.startedNanos));
        }
        budget.release(partition, write.bytes);
        advanceTo(write.last + 1);
    }

    /** Sends the refused records' original bytes, fetched from the input topic, to the DLQ. */
    private void deadLetterRefused(List<SealedGeneration.DeadLettered> refused) {
        if (refused.isEmpty()) {
            return;
        }
        Set<Long> offsets = new TreeSet<>();
        refused.forEach(r -> offsets.add(r.offset()));
        Map<Long, ConsumerRecord<byte[], byte[]>> originals = new HashMap<>();
        rereader.fetch(topicPartition, offsets).forEach(r -> originals.put(r.offset(), r));
        for (SealedGeneration.DeadLettered r : refused) {
            ConsumerRecord<byte[], byte[]> original = originals.get(r.offset());
            DeadLetter dead = new DeadLetter(r.reason(), r.error());
            if (original == null) {
                // Gone from the topic: the dead letter still names the record, so nothing vanishes without a trace.
                deadLetter(null, null, null, System.currentTimeMillis(), r.offset(), dead);
            } else {
                long timestamp = original.timestamp() >= 0 ? original.timestamp() : System.currentTimeMillis();
                deadLetter(original.key(), original.value(), original.headers(), timestamp, r.offset(), dead);
            }
        }
    }

    private void announce(SealedGeneration sealed) {
        GenerationSealed event = GenerationSealed.newBuilder()
                .setShardId(sealed.shard())
                .setTopic(sealed.topic())
                .setPartition(sealed.partition())
                .setGeneration(sealed.generation())
                .setFolder(sealed.folder())
                .setFirstOffset(sealed.firstOffset())
                .setLastOffset(sealed.lastOffset())
                .setRows(sealed.rows())
                .setBytes(sealed.bytes())
                .setSealedAt(sealed.sealedAt())
                .setTableUri(table.location().uri())
                .build();
        context.forward(
                new Record<Object, Object>(sealed.shard(), event, System.currentTimeMillis()),
                IngestTopology.GENERATIONS_SINK);
    }

    /** The committed position: everything below {@code next} is in an announced generation or the DLQ. */
    private void advanceTo(long next) {
        sealedUpTo = next;
        progress.put(SEALED, next);
        sealedPositions.accept(topicPartition, next); // the sealed lag: standard tools show what is not in the table
        if (batchStart < next) {
            batchStart = next;
        }
        if (lastOffset < next - 1) {
            lastOffset = next - 1;
        }
        health.sealed(partition);
        if (lastOffset >= batchStart) {
            health.buffering(partition, batchStartedAtMs); // the next batch's records wait since then
        }
    }

    /** Once per task start: see {@link PartitionRecovery}. */
    private void recoverOnce() {
        if (recovered) {
            return;
        }
        recovered = true;
        if (sealedUpTo == null) {
            return;
        }
        recovery.adoptOrphans(sealedUpTo, this::adopt);
        Long processed = progress.get(PROCESSED);
        if (processed == null || processed <= sealedUpTo) {
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

    /** A generation written but not announced before a restart: its dead letters and event now, not a rewrite. */
    private void adopt(SealedGeneration orphan) {
        deadLetterRefused(orphan.deadLettered());
        announce(orphan);
        lastOffset = Math.max(lastOffset, orphan.lastOffset());
        advanceTo(orphan.lastOffset() + 1);
    }

    @Override
    public void close() {
        SealWrite write = inFlight;
        if (write != null) {
            // Not announced here: the next owner of the partition adopts the generation (or writes it again).
            try {
                write.result.get(60, TimeUnit.SECONDS);
                write.batch.close();
            } catch (TimeoutException e) {
                log.warn(
                        "Shard {}: a generation write still runs at close; its batch's memory is left to the writer",
                        shard);
            } catch (ExecutionException e) {
                write.batch.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        budget.release(partition);
        health.closed(partition);
        if (batch != null) {
            batch.close();
        }
    }
}
