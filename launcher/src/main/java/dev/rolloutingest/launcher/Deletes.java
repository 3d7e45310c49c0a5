package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.table.RolloutTable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Deletes go through the log, as every write does: a tombstone (the record_id as key, no value) published to the
 * input topic, which ingest seals like any record and the merge applies. Then the table is watched until the key is
 * gone for readers: sealed, which takes up to the seal age plus the readers' refresh.
 */
final class Deletes implements AutoCloseable {
    private final KafkaProducer<String, byte[]> producer;
    private final String topic;

    Deletes(Map<String, Object> clientConfig, String topic) {
        Map<String, Object> props = new HashMap<>(clientConfig);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        this.producer = new KafkaProducer<>(
                props, new StringSerializer(), new org.apache.kafka.common.serialization.ByteArraySerializer());
        this.topic = topic;
    }

    /** Publishes the tombstone of {@code recordId}; returns where it landed. */
    RecordMetadata publish(String recordId) throws InterruptedException {
        return publish(recordId, null);
    }

    /**
     * Publishes the tombstone of {@code recordId} in table {@code table} of many (named by the record's
     * {@value IngestConfig#TABLE_HEADER} header: a delete has no fields to route by), or of the one table (null).
     */
    RecordMetadata publish(String recordId, String table) throws InterruptedException {
        if (recordId == null || recordId.isEmpty()) {
            throw new IllegalArgumentException("a record_id to delete must not be empty");
        }
        ProducerRecord<String, byte[]> tombstone = new ProducerRecord<>(topic, recordId, null);
        if (table != null) {
            tombstone.headers().add(IngestConfig.TABLE_HEADER, table.getBytes(StandardCharsets.UTF_8));
        }
        try {
            return producer.send(tombstone).get();
        } catch (ExecutionException e) {
            throw new IllegalStateException(
                    "publishing the delete of " + recordId + " to " + topic + " failed: "
                            + e.getCause().getMessage(),
                    e.getCause());
        }
    }

    /** Waits until readers of {@code table} no longer see {@code recordId}; true when they stopped within the wait. */
    static boolean awaitGone(RolloutTable table, String recordId, Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        while (table.get(recordId).isPresent()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(200);
        }
        return true;
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(10));
    }
}
