package dev.rolloutingest.ingest;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.table.RolloutRow;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.SealedGeneration;
import dev.rolloutingest.table.ShardId;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetOutOfRangeException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;
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
 */
final class PartitionBatcher implements Processor<byte[], byte[], Object, Object> {
    private static final Logger log = LoggerFactory.getLogger(PartitionBatcher.class);
    static final String SEALED = "sealed";
    static final String PROCESSED = "processed";

    private final IngestConfig config;
    private final RolloutTable table;
    private final Deserializer<Rollout> deserializer;
    private final IngestMetrics metrics;
    private final InflightBudget budget;
    private final Function<TopicPartition, Consumer<byte[], byte[]>> recoveryReader;

    private ProcessorContext<Object, Object> context;
    private KeyValueStore<String, Long> progress;
    private String topic;
    private int partition;
    private String shard;
    private boolean recovered;

    private Long sealedUpTo;
    private long lastOffset = -1;
    private final List<RolloutRow> rows = new ArrayList<>();
    private long batchBytes;
    private long batchStartedAtMs;

    PartitionBatcher(IngestConfig config, RolloutTable table, Deserializer<Rollout> deserializer, IngestMetrics metrics,
            InflightBudget budget, Function<TopicPartition, Consumer<byte[], byte[]>> recoveryReader) {
        this.config = config;
        this.table = table;
        this.deserializer = deserializer;
        this.metrics = metrics;
        this.budget = budget;
        this.recoveryReader = recoveryReader;
    }

    @Override
    public void init(ProcessorContext<Object, Object> context) {
        this.context = context;
        this.progress = context.getStateStore(IngestTopology.PROGRESS_STORE);
        this.topic = config.inputTopic();
        this.partition = context.taskId().partition();
        this.shard = ShardId.of(topic, partition);
        this.sealedUpTo = progress.get(SEALED);
        this.recovered = false;
        context.schedule(Duration.ofMillis(config.sealCheckIntervalMs()), PunctuationType.WALL_CLOCK_TIME, this::tick);
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
        recoverOnce();
        RecordMetadata metadata = context.recordMetadata().orElseThrow();
        long offset = metadata.offset();
        if (sealedUpTo == null) {
            // The first record this partition ever delivered: stored at once, or a crash before the first
            // seal would leave no position to re-read from.
            sealedUpTo = offset;
            progress.put(SEALED, offset);
        }
        if (offset < sealedUpTo || offset <= lastOffset) {
            metrics.skippedReplay();
            return;
        }
        metrics.recordIn();
        accept(record.key(), record.value(), record.headers(), record.timestamp(), offset, true);
        progress.put(PROCESSED, offset + 1);
        if (rows.size() >= config.sealMaxRows()) {
            seal("rows");
        } else if (batchBytes >= config.sealMaxBytes()) {
            seal("bytes");
        } else if (budget.over()) {
            // The largest buffer seals at its next check; this one seals now so the total stays bounded.
            metrics.pressure();
            int largest = budget.requestLargest();
            log.info("Shard {} ({}/{}): in-flight budget of {} bytes reached ({} buffered); largest buffer is partition {}",
                    shard, topic, partition, budget.limit(), budget.total(), largest);
            seal("pressure");
        }
    }

    /** Turns one input record into a row, or into a dead letter. {@code live} is false while re-reading. */
    private void accept(byte[] key, byte[] value, Headers headers, long timestamp, long offset, boolean live) {
        if (lastOffset < sealedUpTo) {
            batchStartedAtMs = System.currentTimeMillis();
        }
        lastOffset = offset;
        DeadLetter dead = null;
        Rollout rollout = null;
        String recordKey = key == null ? null : new String(key, StandardCharsets.UTF_8);
        if (value == null) {
            dead = new DeadLetter("null-value", "record has no value (tombstone)");
        } else if (value.length > config.maxPayloadBytes()) {
            dead = new DeadLetter("payload-too-large", "value of " + value.length + " bytes exceeds "
                    + IngestConfig.MAX_PAYLOAD_BYTES + "=" + config.maxPayloadBytes());
        } else {
            try {
                rollout = deserializer.deserialize(topic, value);
            } catch (SerdeException e) {
                if (e instanceof SerdeException.RegistryUnavailable) {
                    throw e; // not the record's fault: the thread is replaced and the record retried
                }
                dead = new DeadLetter(e.reason(), e.getMessage());
            } catch (RuntimeException e) {
                dead = new DeadLetter("not-avro", e.toString());
            }
            if (rollout != null) {
                if (rollout.getRecordId() == null || rollout.getRecordId().isEmpty()) {
                    dead = new DeadLetter("missing-record-id", "record_id is empty");
                } else if (recordKey == null) {
                    dead = new DeadLetter("missing-key", "record has no key; the key must equal record_id "
                            + rollout.getRecordId());
                } else if (!recordKey.equals(rollout.getRecordId())) {
                    dead = new DeadLetter("key-mismatch", "key '" + recordKey + "' differs from record_id '"
                            + rollout.getRecordId() + "'");
                }
            }
        }
        if (dead != null) {
            if (live) {
                metrics.dlq(dead.reason());
                log.warn("Shard {}: {}/{}@{} to the DLQ ({}): {}", shard, topic, partition, offset, dead.reason(), dead.error());
                context.forward(new Record<Object, Object>(key, value, timestamp,
                        dead.headers(headers, topic, partition, offset)), IngestTopology.DLQ_SINK);
            }
            return;
        }
        int payload = rollout.getBinaryPayload() == null ? 0 : rollout.getBinaryPayload().remaining();
        if (live) {
            boolean large = config.largeBlobLogBytes() > 0 && payload >= config.largeBlobLogBytes();
            metrics.blob(payload, large);
            if (large) {
                log.warn("Large payload: {} bytes (warn at {}) in experiment {} record_id {}", payload,
                        config.largeBlobLogBytes(), rollout.getExperiment(), rollout.getRecordId());
            }
        }
        rows.add(new RolloutRow(rollout, partition, offset, Instant.now()));
        long bytes = value.length + (key == null ? 0 : key.length);
        batchBytes += bytes;
        budget.add(partition, bytes);
    }

    private void tick(long now) {
        recoverOnce();
        if (lastOffset >= (sealedUpTo == null ? Long.MAX_VALUE : sealedUpTo)) {
            if (budget.sealRequested(partition)) {
                seal("pressure");
            } else if (now - batchStartedAtMs >= config.sealMaxAgeMs()) {
                seal("age");
            }
        }
    }

    /**
     * Seals [sealedUpTo, lastOffset]: writes the generation (unless every record of the range went to the
     * DLQ), announces it, and moves the committed position, all before the next commit.
     */
    private void seal(String trigger) {
        if (sealedUpTo == null || lastOffset < sealedUpTo) {
            return;
        }
        long first = sealedUpTo;
        long last = lastOffset;
        long started = System.nanoTime();
        if (rows.isEmpty()) {
            metrics.seal(trigger, "empty", Duration.ofNanos(System.nanoTime() - started));
        } else {
            SealedGeneration sealed;
            try {
                sealed = writeWithRetries(first, last);
            } catch (RuntimeException e) {
                metrics.seal(trigger, "failure", Duration.ofNanos(System.nanoTime() - started));
                throw e;
            }
            haltIfFaultInjected();
            announce(sealed);
            metrics.seal(trigger, "success", Duration.ofNanos(System.nanoTime() - started));
            log.info("Shard {} ({}/{}): sealed generation {} [{}..{}] {} rows, {} bytes ({}) in {} ms", shard, topic,
                    partition, sealed.generation(), first, last, sealed.rows(), sealed.bytes(), trigger,
                    (System.nanoTime() - started) / 1_000_000);
        }
        advanceTo(last + 1);
    }

    private static final java.util.concurrent.atomic.AtomicInteger WRITES = new java.util.concurrent.atomic.AtomicInteger();

    /** The crash the exactly-once tests need most: the generation is durable, its event and offsets are not. */
    private void haltIfFaultInjected() {
        int haltAfter = config.faultHaltAfterWrites();
        if (haltAfter > 0 && WRITES.incrementAndGet() == haltAfter) {
            log.warn("Fault injection ({}={}): halting after a generation write", IngestConfig.FAULT_HALT_AFTER_WRITES, haltAfter);
            Runtime.getRuntime().halt(137);
        }
    }

    private SealedGeneration writeWithRetries(long first, long last) {
        long backoff = 200;
        for (int attempt = 1; ; attempt++) {
            try {
                return table.writeGeneration(topic, partition, first, last, rows, batchBytes);
            } catch (RuntimeException e) {
                if (attempt >= config.sealWriteAttempts()) {
                    throw new IllegalStateException("Table " + table.location() + " shard " + shard + ": writing generation "
                            + (last + 1) + " failed " + attempt + " times: " + e.getMessage(), e);
                }
                log.warn("Table {} shard {}: writing generation {} failed (attempt {}/{}), retrying in {} ms: {}",
                        table.location(), shard, last + 1, attempt, config.sealWriteAttempts(), backoff, e.getMessage());
                sleep(backoff);
                backoff = Math.min(backoff * 2, 10_000);
            }
        }
    }

    private void announce(SealedGeneration sealed) {
        GenerationSealed event = GenerationSealed.newBuilder()
                .setShardId(sealed.shard()).setTopic(sealed.topic()).setPartition(sealed.partition())
                .setGeneration(sealed.generation()).setFolder(sealed.folder())
                .setFirstOffset(sealed.firstOffset()).setLastOffset(sealed.lastOffset())
                .setRows(sealed.rows()).setBytes(sealed.bytes()).setSealedAt(sealed.sealedAt())
                .setTableUri(table.location().uri())
                .build();
        context.forward(new Record<Object, Object>(sealed.shard(), event, System.currentTimeMillis()),
                IngestTopology.GENERATIONS_SINK);
    }

    private void advanceTo(long next) {
        sealedUpTo = next;
        progress.put(SEALED, next);
        rows.clear();
        batchBytes = 0;
        budget.release(partition);
        if (lastOffset < next - 1) {
            lastOffset = next - 1;
        }
    }

    /**
     * Once per task start: adopt generations written but not announced before a restart, then re-read
     * the records processed but not yet sealed, so the buffer is what it was.
     */
    private void recoverOnce() {
        if (recovered) {
            return;
        }
        recovered = true;
        if (sealedUpTo == null) {
            return;
        }
        Optional<SealedGeneration> orphan;
        while ((orphan = table.sealedStartingAt(shard, sealedUpTo)).isPresent()) {
            SealedGeneration sealed = orphan.get();
            log.info("Shard {} ({}/{}): adopting generation {} [{}..{}] written before a restart", shard, topic, partition,
                    sealed.generation(), sealed.firstOffset(), sealed.lastOffset());
            announce(sealed);
            metrics.adopted();
            lastOffset = Math.max(lastOffset, sealed.lastOffset());
            advanceTo(sealed.lastOffset() + 1);
        }
        Long processed = progress.get(PROCESSED);
        if (processed == null || processed <= sealedUpTo) {
            return;
        }
        long started = System.nanoTime();
        TopicPartition tp = new TopicPartition(topic, partition);
        int reread = 0;
        try (Consumer<byte[], byte[]> reader = recoveryReader.apply(tp)) {
            reader.assign(List.of(tp));
            reader.seek(tp, sealedUpTo);
            long deadline = System.currentTimeMillis() + 120_000;
            while (reader.position(tp) < processed) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("Shard " + shard + ": re-reading offsets [" + sealedUpTo + ", "
                            + processed + ") of " + tp + " did not finish in 120 s");
                }
                org.apache.kafka.clients.consumer.ConsumerRecords<byte[], byte[]> polled;
                try {
                    polled = reader.poll(Duration.ofMillis(500));
                } catch (OffsetOutOfRangeException e) {
                    // Retention removed records that were processed but never sealed: they cannot be recovered.
                    // Loud (error log + counter), then on from the oldest record the topic still has.
                    long earliest = reader.beginningOffsets(List.of(tp)).get(tp);
                    long lost = Math.min(earliest, processed) - reader.position(tp);
                    metrics.expired(lost);
                    log.error("Shard {} ({}): records [{}, {}) expired from the topic before they were sealed and are"
                            + " LOST; raise the topic's retention above the seal age", shard, tp, reader.position(tp),
                            Math.min(earliest, processed));
                    reader.seek(tp, Math.min(earliest, processed));
                    continue;
                }
                for (ConsumerRecord<byte[], byte[]> record : polled) {
                    if (record.offset() >= processed || record.offset() <= lastOffset) {
                        continue;
                    }
                    accept(record.key(), record.value(), record.headers(), record.timestamp(), record.offset(), false);
                    reread++;
                }
            }
        }
        // Offsets between the last record and `processed` (transaction markers) belong to the batch too.
        lastOffset = Math.max(lastOffset, processed - 1);
        log.info("Shard {} ({}/{}): re-read {} unsealed records [{}..{}) from the input topic in {} ms", shard, topic,
                partition, reread, sealedUpTo, processed, (System.nanoTime() - started) / 1_000_000);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while retrying a generation write", e);
        }
    }

    @Override
    public void close() {
        budget.release(partition);
    }
}
