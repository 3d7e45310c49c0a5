package dev.rolloutingest.ingest;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What an input partition sends on, from the stream thread and so in its exactly-once transaction: dead letters to the
 * DLQ, and for each finished seal the rows its tables refused (their original bytes fetched from the input topic) and a
 * GenerationSealed event per generation written, with the seal's metric and log line.
 */
final class PartitionOutput {
    // the partition's logger: a seal's lines read in order with the batcher's, under one name operators filter on
    private static final Logger log = LoggerFactory.getLogger(PartitionBatcher.class);

    private final ProcessorContext<Object, Object> context;
    private final TableCatalog tables;
    private final RecordCheck check;
    private final IngestMetrics metrics;
    private final InputRereader rereader;
    private final IngestFaults faults;
    private final TopicPartition topicPartition;
    private final String topic;
    private final int partition;
    private final String shard;

    PartitionOutput(
            ProcessorContext<Object, Object> context,
            TopicPartition topicPartition,
            TableCatalog tables,
            RecordCheck check,
            IngestMetrics metrics,
            InputRereader rereader,
            IngestFaults faults) {
        this.context = context;
        this.tables = tables;
        this.check = check;
        this.metrics = metrics;
        this.rereader = rereader;
        this.faults = faults;
        this.topicPartition = topicPartition;
        this.topic = topicPartition.topic();
        this.partition = topicPartition.partition();
        this.shard = ShardId.of(topic, partition);
    }

    void deadLetter(byte[] key, byte[] value, Headers headers, long timestamp, long offset, DeadLetter dead) {
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

    /** A finished write's outcome: the rows its tables refused to the DLQ, then each generation written announced. */
    void written(SealWrite write, List<SealWrite.Written> sealed) {
        deadLetterRefused(write.refused);
        long millis = (System.nanoTime() - write.startedNanos) / 1_000_000;
        if (!sealed.isEmpty()) {
            faults.afterGenerationWrite();
            long rows = 0;
            long bytes = 0;
            for (SealWrite.Written written : sealed) {
                deadLetterRefused(written.generation().deadLettered());
                announce(written);
                rows += written.generation().rows();
                bytes += written.generation().bytes();
            }
            metrics.seal(write.trigger, "success", Duration.ofNanos(System.nanoTime() - write.startedNanos));
            log.info(
                    "Shard {} ({}/{}): sealed generation {} [{}..{}] in {} table(s), {} rows, {} bytes ({}) in {} ms",
                    shard,
                    topic,
                    partition,
                    write.last + 1,
                    write.first,
                    write.last,
                    sealed.size(),
                    rows,
                    bytes,
                    write.trigger,
                    millis);
        } else {
            metrics.seal(write.trigger, "empty", Duration.ofNanos(System.nanoTime() - write.startedNanos));
        }
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

    private void announce(SealWrite.Written written) {
        SealedGeneration sealed = written.generation();
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
                .setTableUri(written.tableUri())
                .build();
        context.forward(
                new Record<Object, Object>(
                        tables.shardKey(written.table(), sealed.shard()), event, System.currentTimeMillis()),
                IngestTopology.GENERATIONS_SINK);
    }
}
