package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** The clients the benches load the embedded broker with. */
final class BenchClients {
    private BenchClients() {}

    /** A producer for bulk loads: acknowledged by all replicas, large batches, records of up to 4 MiB. */
    static KafkaProducer<byte[], byte[]> bulkProducer(EmbeddedKafka kafka) {
        return new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.LINGER_MS_CONFIG,
                        20,
                        ProducerConfig.BATCH_SIZE_CONFIG,
                        512 * 1024,
                        ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
                        4 << 20),
                new ByteArraySerializer(),
                new ByteArraySerializer());
    }

    /** Rollouts in the Confluent wire format, their schema registered in the embedded registry. */
    static ConfluentAvroSerializer<Rollout> rolloutSerializer(ApicurioRegistry registry) {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        return serializer;
    }
}
