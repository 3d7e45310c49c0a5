package dev.rolloutingest.testsupport;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;

/** Reading what the apps wrote to a topic. */
public final class Topics {
    private Topics() {}

    /**
     * Every committed record of a topic, read from its beginning to its last stable offset as of now (assigned, not
     * subscribed: no group to join, no quiet period to guess).
     */
    public static <K, V> List<ConsumerRecord<K, V>> readToEnd(
            String bootstrapServers, String topic, Deserializer<K> keys, Deserializer<V> values) {
        List<ConsumerRecord<K, V>> records = new ArrayList<>();
        try (KafkaConsumer<K, V> consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        bootstrapServers,
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed"),
                keys,
                values)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(60)).stream()
                    .map(p -> new TopicPartition(topic, p.partition()))
                    .toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(60));
            long deadline = System.currentTimeMillis() + 120_000;
            while (partitions.stream().anyMatch(tp -> consumer.position(tp, Duration.ofSeconds(60)) < ends.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError(topic + " not read to its end " + ends + " within 120 s");
                }
                consumer.poll(Duration.ofMillis(300)).forEach(records::add);
            }
        }
        return records;
    }
}
