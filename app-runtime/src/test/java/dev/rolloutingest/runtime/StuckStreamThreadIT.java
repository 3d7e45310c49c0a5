package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.EmbeddedKafka;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;

/**
 * A stream thread blocked in its work for good (as a native call that never returns leaves it) still looks RUNNING to
 * Kafka Streams; /health names it once it has not polled for max.poll.interval.ms, and is healthy again once it does.
 */
class StuckStreamThreadIT {
    private static final int MAX_POLL_INTERVAL_MS = 4_000;

    @Test
    void aThreadThatStopsPollingMakesHealthNameItAndRecovers() throws Exception {
        Path root = Path.of("target", "it-stuck-thread", UUID.randomUUID().toString())
                .toAbsolutePath();
        try (EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka"))) {
            kafka.createTopics(List.of(new NewTopic("in", 1, (short) 1)));
            Properties props = new Properties();
            props.put(
                    StreamsConfig.APPLICATION_ID_CONFIG,
                    "stuck-" + UUID.randomUUID().toString().substring(0, 8));
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
            props.put(StreamsConfig.STATE_DIR_CONFIG, root.resolve("state").toString());
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG), MAX_POLL_INTERVAL_MS);
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            Topology topology = new Topology();
            topology.addSource(
                    "in", Serdes.String().deserializer(), Serdes.String().deserializer(), "in");
            topology.addProcessor(
                    "block",
                    () -> new Processor<String, String, Void, Void>() {
                        @Override
                        public void process(Record<String, String> record) {
                            entered.countDown();
                            try {
                                release.await(120, TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    },
                    "in");
            try (StreamsRuntime runtime = new StreamsRuntime("stuck", topology, props, new SimpleMeterRegistry());
                    KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
                            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
                runtime.start().awaitRunning(Duration.ofSeconds(60));
                assertThat(runtime.problems()).isEmpty();

                producer.send(new ProducerRecord<>("in", "k", "v")).get();
                assertThat(entered.await(60, TimeUnit.SECONDS))
                        .as("the thread is in its work")
                        .isTrue();
                await(() -> !runtime.stuckThreads().isEmpty(), Duration.ofSeconds(30));
                assertThat(runtime.problems()).anySatisfy(problem -> assertThat(problem)
                        .contains("has not polled Kafka")
                        .contains("StreamThread-1"));

                release.countDown();
                await(() -> runtime.problems().isEmpty(), Duration.ofSeconds(60));
            }
        }
    }

    private static void await(BooleanSupplier condition, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not true within " + within);
            }
            Thread.sleep(200);
        }
    }
}
