package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.BatchSizing;
import dev.rolloutingest.table.generations.GenerationBatch;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The limits ingest is measured against, on the same preloaded records: (a) a plain consumer with the topology's
 * Avro decode into Arrow columns, (b) a plain write of the same rows as generation-sized datasets, (c) the two
 * pipelined (consume and decode on one thread, write on another, no exactly-once).
 */
final class IngestLimits {
    private final EmbeddedKafka kafka;
    private final ApicurioRegistry registry;
    private final int records;
    private final int partitions;
    private final int payloadBytes;
    /** The consumer's batches sized as a table's are ({@link RolloutTable}'s generations). */
    private final BatchSizing sizing = new BatchSizing();

    IngestLimits(EmbeddedKafka kafka, ApicurioRegistry registry, int records, int partitions, int payloadBytes) {
        this.kafka = kafka;
        this.registry = registry;
        this.records = records;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
    }

    private KafkaConsumer<byte[], byte[]> consumer() {
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed",
                        ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                        2000,
                        ConsumerConfig.FETCH_MAX_BYTES_CONFIG,
                        64 << 20,
                        ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG,
                        8 << 20),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition("rollouts", p));
        }
        consumer.assign(all);
        consumer.seekToBeginning(all);
        return consumer;
    }

    private ConfluentAvroDeserializer<Rollout> deserializer() {
        ConfluentAvroDeserializer<Rollout> deserializer = new ConfluentAvroDeserializer<>(null, Rollout.class);
        deserializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        return deserializer;
    }

    /** Consumes and decodes (into Arrow columns, as the topology does) one batch per generation, not written. */
    double plainConsumer(BufferAllocator allocator) {
        ConfluentAvroDeserializer<Rollout> deserializer = deserializer();
        Map<Integer, GenerationBatch> batches = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            long started = System.nanoTime();
            long decoded = 0;
            Instant now = Instant.now();
            while (decoded < records) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    GenerationBatch batch = batches.computeIfAbsent(
                            record.partition(), p -> new GenerationBatch(allocator, name -> null, sizing));
                    decodeInto(deserializer, batch, record, now);
                    decoded++;
                    if (batch.size() >= IngestBench.GENERATION_ROWS) {
                        batch.sealedRoot(); // its sizes are where the partition's next batch starts, as in a table
                        batches.remove(record.partition()).close();
                    }
                }
            }
            return records / ((System.nanoTime() - started) / 1e9);
        } finally {
            batches.values().forEach(GenerationBatch::close);
        }
    }

    /** The topology's decode: straight from the wire format into the batch's next row. */
    private static void decodeInto(
            ConfluentAvroDeserializer<Rollout> deserializer,
            GenerationBatch batch,
            ConsumerRecord<byte[], byte[]> record,
            Instant now) {
        deserializer.deserializeFields(
                record.topic(), record.value(), batch.rowReader(record.partition(), record.offset(), now));
        batch.commitStaged();
    }

    /** The same rows, converted to Arrow beforehand (not timed), written one generation after another. */
    double plainWrite(Path path) throws Exception {
        try (RolloutTable table = RolloutTable.createOrOpen(
                TableLocation.local(path), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            RolloutGenerator generator = new RolloutGenerator("bench", payloadBytes, 7);
            Instant now = Instant.now();
            long nanos = 0;
            for (int first = 0; first < records; first += IngestBench.GENERATION_ROWS) {
                int last = Math.min(records, first + IngestBench.GENERATION_ROWS) - 1;
                try (GenerationBatch batch = table.generations().newBatch()) {
                    for (int i = first; i <= last; i++) {
                        batch.append(generator.rollout(i, 0), 0, i, now);
                    }
                    long started = System.nanoTime();
                    table.generations().write("rollouts", 0, first, last, batch, 0, List.of());
                    nanos += System.nanoTime() - started;
                }
            }
            return records / (nanos / 1e9);
        }
    }

    /** A sealed batch for the writer thread. */
    private record Sealed(int partition, long first, long last, GenerationBatch batch) {}

    double pipelined(Path path) throws Exception {
        ConfluentAvroDeserializer<Rollout> deserializer = deserializer();
        try (RolloutTable table = RolloutTable.createOrOpen(
                        TableLocation.local(path), TableSettings.DEFAULTS, new SimpleMeterRegistry());
                KafkaConsumer<byte[], byte[]> consumer = consumer()) {
            BlockingQueue<Sealed> queue = new ArrayBlockingQueue<>(2);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread writer = new Thread(
                    () -> {
                        try {
                            for (Sealed s; (s = queue.take()).batch() != null; ) {
                                try (GenerationBatch batch = s.batch()) {
                                    table.generations()
                                            .write("rollouts", s.partition(), s.first(), s.last(), batch, 0, List.of());
                                }
                            }
                        } catch (Throwable e) {
                            failure.set(e);
                        }
                    },
                    "bench-writer");
            long started = System.nanoTime();
            writer.start();
            Map<Integer, GenerationBatch> batches = new HashMap<>();
            Map<Integer, Long> firsts = new HashMap<>();
            Map<Integer, Long> lasts = new HashMap<>();
            int consumed = 0;
            while (consumed < records && failure.get() == null) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    consumed++;
                    GenerationBatch batch = batches.computeIfAbsent(
                            record.partition(), p -> table.generations().newBatch());
                    firsts.putIfAbsent(record.partition(), record.offset());
                    lasts.put(record.partition(), record.offset());
                    decodeInto(deserializer, batch, record, Instant.now());
                    if (batch.size() >= IngestBench.GENERATION_ROWS) {
                        queue.put(new Sealed(
                                record.partition(), firsts.remove(record.partition()), record.offset(), batch));
                        batches.remove(record.partition());
                    }
                }
            }
            for (Map.Entry<Integer, GenerationBatch> open : batches.entrySet()) {
                queue.put(new Sealed(
                        open.getKey(), firsts.get(open.getKey()), lasts.get(open.getKey()), open.getValue()));
            }
            queue.put(new Sealed(-1, 0, 0, null));
            writer.join();
            if (failure.get() != null) {
                throw new IllegalStateException(failure.get());
            }
            return records / ((System.nanoTime() - started) / 1e9);
        }
    }
}
