package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.testsupport.Rollouts;
import dev.rolloutingest.testsupport.Services;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.LongSupplier;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.tools.consumer.group.LagProbe;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lag that means "not yet in the table", read with Kafka's own ConsumerGroupCommand: the ingest app's
 * group says what was processed, `<application.id>-sealed` what is not yet sealed, `<...>-merged` what is
 * not yet in the base. The table is on a real S3 API so generation writes can be made to fail.
 */
class ConsumerLagIT {
    private static final Path ROOT = Path.of("target", "it-lag").toAbsolutePath();
    private static final long SEAL_MAX_AGE_MS = 12_000;
    private static EmbeddedKafka kafka;
    private static ApicurioRegistry registry;
    private static EmbeddedS3 s3;

    @RegisterExtension
    static final Services SERVICES = Services.withS3("it-lag", "lag");

    @BeforeAll
    static void services() {
        kafka = SERVICES.cluster().kafka();
        registry = SERVICES.cluster().registry();
        s3 = SERVICES.cluster().s3();
    }

    /** Records {@code [from, to)}, each of a key of its own. */
    private static void produce(String topic, int from, int to) {
        new Rollouts(SERVICES.cluster(), new RolloutGenerator("lag", 64, 1))
                .produce(
                        topic,
                        from,
                        to,
                        Integer.MAX_VALUE,
                        new java.util.HashMap<>(),
                        new java.util.concurrent.atomic.AtomicLong(),
                        0);
    }

    private static long lag(String group, String topic) throws Exception {
        return LagProbe.totalLag(kafka.bootstrapServers(), group, topic, 2);
    }

    /** Waits until the supplier gives the value; returns the last value seen. */
    private static long await(LongSupplier value, long expected, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        long last = value.getAsLong();
        while (last != expected && System.currentTimeMillis() < deadline) {
            Thread.sleep(250);
            last = value.getAsLong();
        }
        return last;
    }

    private static LongSupplier lagOf(String group, String topic) {
        return () -> {
            try {
                return lag(group, topic);
            } catch (Exception e) {
                return Long.MIN_VALUE;
            }
        };
    }

    private Map<String, Object> common(String run, String tableUri) {
        Map<String, Object> props = new HashMap<>(Map.of(
                "bootstrap.servers",
                kafka.bootstrapServers(),
                "schema.registry.url",
                registry.confluentUrl(),
                "rollout.table.uri",
                tableUri,
                "http.port",
                "0",
                "rollout.generations.topic",
                run + "-generations",
                "rollout.commit.interval.ms",
                "200",
                "rollout.lag.publish.interval.ms",
                "200"));
        s3.lanceStorageOptions().forEach((k, v) -> props.put("rollout.table.storage." + k, v));
        return props;
    }

    @Test
    void theSealedAndMergedGroupsShowOnStandardToolsWhatIsNotYetInTheTable() throws Exception {
        String run = "lag-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        kafka.createTopics(List.of(
                new NewTopic(input, 2, (short) 1),
                new NewTopic(run + "-generations", 1, (short) 1),
                new NewTopic(run + "-dlq", 1, (short) 1),
                new NewTopic(run + "-merges", 1, (short) 1)));
        String tableUri = s3.uri(run);
        Map<String, Object> ingestProps = common(run, tableUri);
        ingestProps.putAll(Map.of(
                "application.id",
                run,
                "rollout.input.topic",
                input,
                "rollout.dlq.topic",
                run + "-dlq",
                "rollout.state.dir",
                ROOT.resolve(run).resolve("ingest-state").toString(),
                "rollout.seal.max.rows",
                "100000",
                "rollout.seal.max.age.ms",
                Long.toString(SEAL_MAX_AGE_MS),
                "rollout.seal.check.interval.ms",
                "100",
                "rollout.seal.write.attempts",
                "3"));
        Map<String, Object> mergeProps = common(run, tableUri);
        mergeProps.putAll(Map.of(
                "application.id",
                run + "-merge",
                "rollout.merges.topic",
                run + "-merges",
                "rollout.state.dir",
                ROOT.resolve(run).resolve("merge-state").toString(),
                "rollout.lag.merged.group",
                run + "-merged",
                "rollout.merge.after.generations",
                "1",
                "rollout.merge.max.pending.age.ms",
                "500",
                "rollout.gc.interval.ms",
                "0",
                "rollout.compaction.interval.ms",
                "0"));
        try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
                MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start()) {
            ingest.runtime().awaitRunning(Duration.ofSeconds(60));
            long producing = System.nanoTime();
            produce(input, 0, 400);
            // Processed: the app's own group reaches 0 lag while nothing is sealed (the seal age is 12 s).
            assertThat(await(lagOf(run, input), 0, 120)).as("processed lag").isZero();
            long sealedLag = lag(run + "-sealed", input);
            // The first record was processed after `producing`: before the seal age has passed since then,
            // nothing can have been sealed. A machine too slow to get here within it cannot tell.
            double seconds = (System.nanoTime() - producing) / 1e9;
            if (seconds * 1000 < SEAL_MAX_AGE_MS) {
                assertThat(sealedLag)
                        .as("sealed lag = produced - sealed, %.1f s after producing began", seconds)
                        .isEqualTo(400);
            } else {
                System.out.printf(
                        "lag: not checking the sealed lag before sealing: producing and processing took %.1f s,"
                                + " past the %d ms seal age%n",
                        seconds, SEAL_MAX_AGE_MS);
            }
            // After the age trigger everything is sealed, then merged.
            assertThat(await(lagOf(run + "-sealed", input), 0, 120)).isZero();
            assertThat(await(lagOf(run + "-merged", input), 0, 120))
                    .as("merged lag")
                    .isZero();

            // The store refuses every write: processed lag 0, sealed lag stays up until writes work again.
            s3.refuseRequests(true);
            produce(input, 400, 700);
            assertThat(await(lagOf(run, input), 0, 120)).isZero();
            // Time passes deliberately: past the seal age the seals are tried and fail. However slow the machine,
            // nothing can be sealed while the store refuses every write.
            Thread.sleep(SEAL_MAX_AGE_MS + 3_000);
            assertThat(lag(run + "-sealed", input))
                    .as("sealed lag while writes fail")
                    .isEqualTo(300);
            s3.refuseRequests(false);
            assertThat(await(lagOf(run + "-sealed", input), 0, 120))
                    .as("sealed lag once writes work")
                    .isZero();
            assertThat(await(lagOf(run + "-merged", input), 0, 120)).isZero();
        }
        long sealedBefore = committed(run + "-sealed", input);
        // A restart never moves a position backwards.
        try (IngestApp again = new IngestApp(IngestConfig.of(ingestProps)).start()) {
            again.runtime().awaitRunning(Duration.ofSeconds(60));
            Thread.sleep(2_000); // time to move a position, were it to move: it must not go backwards
            assertThat(committed(run + "-sealed", input)).isGreaterThanOrEqualTo(sealedBefore);
        }
    }

    @Test
    void aLagGroupThatHasMembersIsRefusedNamingTheSetting() throws Exception {
        String run = "taken-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        kafka.createTopics(
                List.of(new NewTopic(input, 1, (short) 1), new NewTopic(run + "-generations", 1, (short) 1)));
        Map<String, Object> props = common(run, s3.uri(run));
        props.putAll(Map.of(
                "application.id",
                run,
                "rollout.input.topic",
                input,
                "rollout.state.dir",
                ROOT.resolve(run).resolve("state").toString()));
        try (KafkaConsumer<byte[], byte[]> member = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ConsumerConfig.GROUP_ID_CONFIG,
                        run + "-sealed"),
                new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            member.subscribe(List.of(input));
            long deadline = System.currentTimeMillis() + 120_000;
            while (member.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                member.poll(Duration.ofMillis(200));
            }
            assertThat(member.assignment()).as("the member joined its group").isNotEmpty();
            assertThatThrownBy(() -> new IngestApp(IngestConfig.of(props)))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("rollout.lag.sealed.group")
                    .hasMessageContaining("member");
        }
    }

    private static long committed(String group, String topic) throws Exception {
        try (var admin = kafka.admin()) {
            return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet().stream()
                    .filter(e -> e.getKey().topic().equals(topic))
                    .mapToLong(e -> e.getValue().offset())
                    .sum();
        }
    }
}
