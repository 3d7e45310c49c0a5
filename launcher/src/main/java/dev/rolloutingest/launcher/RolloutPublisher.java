package dev.rolloutingest.launcher;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/** Publishes generated rollouts, keyed by record_id, in Confluent wire format; optionally rate-limited. */
final class RolloutPublisher {
    private final Map<String, Object> clientConfig;
    private final String registryUrl;

    RolloutPublisher(String bootstrapServers, String registryUrl) {
        this(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers), registryUrl);
    }

    /** @param clientConfig the brokers and any security settings */
    RolloutPublisher(Map<String, Object> clientConfig, String registryUrl) {
        this.clientConfig = Map.copyOf(clientConfig);
        this.registryUrl = registryUrl;
    }

    /**
     * @param keys distinct record_ids; record i gets id {@code experiment-(i % keys)} (rewrites when count > keys)
     * @param ratePerSecond 0 = as fast as the broker takes them
     */
    void publish(
            String topic,
            String experiment,
            long count,
            long keys,
            int payloadBytes,
            double ratePerSecond,
            AtomicLong acknowledged)
            throws InterruptedException {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registryUrl), false);
        RolloutGenerator generator = new RolloutGenerator(experiment, payloadBytes, 20_261_130L);
        long started = System.nanoTime();
        Map<String, Object> props = new HashMap<>(clientConfig);
        props.putAll(Map.of(
                ProducerConfig.ACKS_CONFIG,
                "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.LINGER_MS_CONFIG,
                5,
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
                Math.max(1 << 20, payloadBytes * 2 + 65_536)));
        try (KafkaProducer<String, Rollout> producer = new KafkaProducer<>(props, new StringSerializer(), serializer)) {
            for (long i = 0; i < count; i++) {
                Rollout rollout = generator.rollout(i % keys, (int) (i / keys));
                producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout), (metadata, error) -> {
                    if (error == null) {
                        acknowledged.incrementAndGet();
                    } else {
                        System.err.println("produce failed: " + error);
                    }
                });
                if (ratePerSecond > 0) {
                    long due = started + (long) ((i + 1) * 1e9 / ratePerSecond);
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                }
            }
            producer.flush();
        }
    }
}
