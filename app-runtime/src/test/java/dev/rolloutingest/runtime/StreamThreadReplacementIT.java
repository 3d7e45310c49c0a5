package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.EmbeddedKafka;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.junit.jupiter.api.Test;

/**
 * A stream thread that fails is replaced, and the partitions it held are read again long before the session timeout:
 * the failed thread's static member leaves the group instead of holding them until the timeout.
 */
class StreamThreadReplacementIT {
    private static final Duration SESSION_TIMEOUT = Duration.ofSeconds(60);

    @Test
    void aReplacedThreadsPartitionsAreReadAgainWithinHalfTheSessionTimeout() throws Exception {
        Path root = Path.of("target", "it-thread-replacement", UUID.randomUUID().toString())
                .toAbsolutePath();
        try (EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka"))) {
            kafka.createTopics(List.of(new NewTopic("in", 1, (short) 1), new NewTopic("out", 1, (short) 1)));
            String applicationId = "replacement-" + UUID.randomUUID().toString().substring(0, 8);
            Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
            props.put(StreamsConfig.STATE_DIR_CONFIG, root.resolve("state").toString());
            props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
            props.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), "instance-a");
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), (int)
                    SESSION_TIMEOUT.toMillis());
            props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 2_000);
            AtomicBoolean failed = new AtomicBoolean();
            Topology topology = new Topology();
            topology.addSource(
                    "in", Serdes.String().deserializer(), Serdes.String().deserializer(), "in");
            topology.addProcessor("fail-once", () -> new FailOnce(failed), "in");
            topology.addSink(
                    "out", "out", Serdes.String().serializer(), Serdes.String().serializer(), "fail-once");

            try (StreamsRuntime runtime =
                            new StreamsRuntime("replacement", topology, props, new SimpleMeterRegistry());
                    KafkaProducer<String, String> producer = producer(kafka);
                    KafkaConsumer<String, String> out = consumer(kafka);
                    Admin admin = kafka.admin()) {
                runtime.start().awaitRunning(Duration.ofSeconds(60));
                out.subscribe(List.of("out"));
                producer.send(new ProducerRecord<>("in", "k", "before")).get();
                List<String> seen = new ArrayList<>();
                awaitValue(out, seen, "before", Duration.ofSeconds(60));
                assertThat(members(admin, applicationId)).containsExactly("instance-a-1");

                producer.send(new ProducerRecord<>("in", "k", "fail")).get();
                producer.send(new ProducerRecord<>("in", "k", "after")).get();
                long sent = System.nanoTime();
                awaitValue(out, seen, "after", SESSION_TIMEOUT.dividedBy(2));
                Duration took = Duration.ofNanos(System.nanoTime() - sent);
                assertThat(failed).as("the thread failed once").isTrue();
                assertThat(members(admin, applicationId))
                        .as("the failed thread's member left; its replacement holds the partition")
                        .containsExactly("instance-a-2");
                System.out.println("thread replaced: read again after " + took.toMillis() + " ms");
            }
        }
    }

    /** Forwards every value; throws on the first value "fail" (the replacement thread then forwards it). */
    private static final class FailOnce implements Processor<String, String, String, String> {
        private final AtomicBoolean failed;
        private ProcessorContext<String, String> context;

        FailOnce(AtomicBoolean failed) {
            this.failed = failed;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            if ("fail".equals(record.value()) && failed.compareAndSet(false, true)) {
                throw new IllegalStateException("failing the stream thread once");
            }
            context.forward(record);
        }
    }

    private static void awaitValue(
            KafkaConsumer<String, String> out, List<String> seen, String value, Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        while (!seen.contains(value)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("'" + value + "' not read within " + within + "; read " + seen);
            }
            out.poll(Duration.ofMillis(200)).forEach(record -> seen.add(record.value()));
        }
    }

    private static Set<String> members(Admin admin, String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).all().get().get(group).members().stream()
                .map(MemberDescription::groupInstanceId)
                .map(id -> id.orElse("(dynamic)"))
                .collect(Collectors.toSet());
    }

    private static KafkaProducer<String, String> producer(EmbeddedKafka kafka) {
        return new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                StringSerializer.class));
    }

    private static KafkaConsumer<String, String> consumer(EmbeddedKafka kafka) {
        return new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG,
                "reader-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                StringDeserializer.class));
    }
}
