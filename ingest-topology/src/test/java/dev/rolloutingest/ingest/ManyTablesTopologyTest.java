package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Many topics into many tables: routing, refusals, one seal per trigger over tables. A seal cut short by a crash is
 * ManyTablesIT's (a restart needs the state the driver does not keep).
 */
class ManyTablesTopologyTest {
    private static final List<String> TOPICS = List.of("actors-a", "actors-b");

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "ttd", UUID.randomUUID().toString()).toAbsolutePath();
    private TableCatalog tables;
    private TopologyTestDriver driver;
    private final Map<String, TestInputTopic<byte[], byte[]>> inputs = new HashMap<>();
    private TestOutputTopic<String, GenerationSealed> events;
    private TestOutputTopic<byte[], byte[]> dlq;
    /** Every record piped, per input partition, for the re-reader after a restart. */
    private final Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> piped = new HashMap<>();

    private void start(Map<String, Object> overrides) {
        Map<String, Object> values = new HashMap<>(Map.of(
                "bootstrap.servers",
                "unused:9092",
                "schema.registry.url",
                "http://unused:8081",
                "rollout.tables.root",
                dir.resolve("tables").toString(),
                "rollout.input.topics",
                String.join(",", TOPICS),
                "rollout.table.route",
                "${experiment}",
                "rollout.state.dir",
                dir.resolve("state").toString(),
                "rollout.seal.max.age.ms",
                600_000L));
        values.putAll(overrides);
        IngestConfig config = IngestConfig.of(values);
        if (tables == null) {
            tables = config.openTables(meters);
        }
        InflightBudget budget = new InflightBudget(0);
        var topology = IngestTopology.build(
                config,
                tables,
                new IngestMetrics(meters, budget),
                budget,
                FixedSchemaSerde.rollouts(),
                FixedSchemaSerde.sealedEvents(),
                this::pipedRecords,
                new IngestHealth(),
                IngestFaults.NONE,
                new SealWriters(0), // generations written on the stream thread
                (tp, offset) -> {});
        Properties props = config.streamsProperties();
        props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state").toString());
        driver = new TopologyTestDriver(topology, props, Instant.now());
        inputs.clear();
        for (String topic : TOPICS) {
            inputs.put(topic, driver.createInputTopic(topic, new ByteArraySerializer(), new ByteArraySerializer()));
        }
        events = driver.createOutputTopic(
                "rollout-generations", new StringDeserializer(), FixedSchemaSerde.sealedEventsReader());
        dlq = driver.createOutputTopic("rollouts-dlq", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private Consumer<byte[], byte[]> pipedRecords(TopicPartition tp) {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("none");
        List<ConsumerRecord<byte[], byte[]>> records = piped.getOrDefault(tp, List.of());
        consumer.updateBeginningOffsets(Map.of(tp, 0L));
        consumer.updateEndOffsets(Map.of(tp, (long) records.size()));
        consumer.schedulePollTask(() -> records.forEach(consumer::addRecord));
        return consumer;
    }

    private void send(String topic, Rollout rollout) {
        pipe(
                topic,
                rollout.getRecordId().toString().getBytes(StandardCharsets.UTF_8),
                FixedSchemaSerde.rollout(rollout),
                new RecordHeaders());
    }

    private void pipe(String topic, byte[] key, byte[] value, Headers headers) {
        List<ConsumerRecord<byte[], byte[]>> records =
                piped.computeIfAbsent(new TopicPartition(topic, 0), tp -> new ArrayList<>());
        ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>(topic, 0, records.size(), key, value);
        headers.forEach(h -> record.headers().add(h));
        records.add(record);
        inputs.get(topic).pipeInput(new TestRecord<>(key, value, headers));
    }

    private static Rollout rollout(String experiment, int index) {
        return new RolloutGenerator(experiment, 16, 7).rollout(index, 0);
    }

    private long rows(String table) {
        return tables.open(table).orElseThrow().countRows();
    }

    @AfterEach
    void stop() {
        if (driver != null) {
            driver.close();
        }
        if (tables != null) {
            tables.close();
        }
    }

    @Test
    void aSealWritesOneGenerationPerTableForTheSameRangeOnceOneTableHoldsTheRowTrigger() {
        start(Map.of("rollout.seal.max.rows", 10));
        for (int i = 0; i < 30; i++) {
            send("actors-a", rollout("exp-" + i % 3, i));
        }
        // exp-0's tenth row is offset 27: the seal counts a table's rows, not the partition's (its 10th was offset 9)
        List<org.apache.kafka.streams.test.TestRecord<String, GenerationSealed>> records = events.readRecordsToList();
        assertThat(records)
                .as("each event keyed by its table and shard: merge-worker instances share the tables out")
                .allSatisfy(r -> assertThat(r.key())
                        .isEqualTo(tables.nameOf(r.value().getTableUri().toString())
                                        .orElseThrow() + "/" + ShardId.of("actors-a", 0)));
        List<GenerationSealed> sealed = records.stream().map(r -> r.value()).toList();
        assertThat(sealed).hasSize(3);
        assertThat(sealed).allSatisfy(g -> {
            assertThat(g.getShardId()).isEqualTo(ShardId.of("actors-a", 0));
            assertThat(g.getFirstOffset()).isZero();
            assertThat(g.getLastOffset()).isEqualTo(27);
        });
        Map<String, Long> rowsByTable =
                sealed.stream().collect(Collectors.toMap(g -> g.getTableUri().toString(), g -> (long) g.getRows()));
        assertThat(rowsByTable)
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        tables.locationOf("exp-0").uri(), 10L,
                        tables.locationOf("exp-1").uri(), 9L,
                        tables.locationOf("exp-2").uri(), 9L));
        assertThat(tables.names()).containsExactly("exp-0", "exp-1", "exp-2");
        for (int e = 0; e < 3; e++) {
            assertThat(rows("exp-" + e)).isEqualTo(e == 0 ? 10 : 9);
            assertThat(tables.open("exp-" + e).orElseThrow().get(RolloutGenerator.recordId("exp-" + e, e)))
                    .isPresent();
        }
        assertThat(meters.find("rollout.ingest.seals").tags("trigger", "rows").counters().stream()
                        .mapToDouble(c -> c.count())
                        .sum())
                .as("the partition's rows trigger one seal, whatever the number of tables")
                .isEqualTo(1);
    }

    @Test
    void eachInputTopicPartitionIsAShardWithItsOwnPositions() {
        start(Map.of("rollout.seal.max.rows", 4, "rollout.table.route", "t-${topic}"));
        for (int i = 0; i < 4; i++) {
            send("actors-a", rollout("x", i));
            send("actors-b", rollout("y", i));
        }
        List<GenerationSealed> sealed = events.readValuesToList();
        assertThat(sealed).hasSize(2);
        assertThat(sealed.stream().map(g -> g.getShardId().toString()).collect(Collectors.toSet()))
                .containsExactlyInAnyOrder(ShardId.of("actors-a", 0), ShardId.of("actors-b", 0));
        assertThat(sealed).allSatisfy(g -> assertThat(g.getLastOffset()).isEqualTo(3));
        assertThat(rows("t-actors-a")).isEqualTo(4);
        assertThat(rows("t-actors-b")).isEqualTo(4);
    }

    @Test
    void recordsRoutedNowhereOrToARefusedOrOneTableTooManyGoToTheDlqWithTheirReason() {
        start(Map.of(
                "rollout.seal.max.rows",
                1_000,
                "rollout.seal.max.age.ms",
                1_000L,
                "rollout.tables.max",
                2,
                "rollout.table.name.allow",
                "exp-.*"));
        send("actors-a", rollout("exp-0", 0));
        send("actors-a", rollout("exp-1", 1));
        send("actors-a", rollout("exp-2", 2)); // a third table: over the cap
        send("actors-a", rollout("other", 3)); // not allowed
        send("actors-a", rollout("exp 4", 4)); // not a path segment
        send("actors-a", rollout("", 5)); // the route's field is empty
        // a delete has no fields: with a route by field it names its table in a header, or goes nowhere
        pipe("actors-a", "gone-1".getBytes(StandardCharsets.UTF_8), null, new RecordHeaders());
        RecordHeaders named = new RecordHeaders();
        named.add(IngestConfig.TABLE_HEADER, "exp-0".getBytes(StandardCharsets.UTF_8));
        pipe("actors-a", RolloutGenerator.recordId("exp-0", 0).getBytes(StandardCharsets.UTF_8), null, named);
        Map<String, String> reasons = new HashMap<>();
        for (TestRecord<byte[], byte[]> dead : dlq.readRecordsToList()) {
            reasons.put(
                    new String(dead.key(), StandardCharsets.UTF_8),
                    new String(dead.headers().lastHeader("rollout.dlq.reason").value(), StandardCharsets.UTF_8));
        }
        assertThat(reasons)
                .containsEntry(RolloutGenerator.recordId("exp-2", 2), RecordCheck.TABLE_CAP)
                .containsEntry(RolloutGenerator.recordId("other", 3), TableRoute.NAME_REFUSED)
                .containsEntry(RolloutGenerator.recordId("exp 4", 4), TableRoute.NAME_REFUSED)
                .containsEntry(RolloutGenerator.recordId("", 5), TableRoute.NO_ROUTE)
                .containsEntry("gone-1", TableRoute.NO_ROUTE)
                .hasSize(5);
        driver.advanceWallClockTime(java.time.Duration.ofSeconds(2));
        assertThat(tables.names()).containsExactly("exp-0", "exp-1");
        assertThat(rows("exp-1")).isEqualTo(1);
        assertThat(rows("exp-0"))
                .as("the delete named its table and hides the row")
                .isZero();
    }

    @Test
    void routesAreCheckedAtStart() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> IngestConfig.of(Map.of(
                        "bootstrap.servers", "x:1",
                        "schema.registry.url", "http://x",
                        "rollout.tables.root", dir.toString(),
                        "rollout.table.route", "${topic.1}")))
                .hasMessageContaining("rollout.table.route")
                .hasMessageContaining("rollout.input.topic.pattern");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> IngestConfig.of(Map.of(
                        "bootstrap.servers", "x:1",
                        "schema.registry.url", "http://x",
                        "rollout.table.uri", dir.toString(),
                        "rollout.table.route", "${experiment}")))
                .hasMessageContaining("rollout.tables.root");
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> IngestConfig.of(Map.of("bootstrap.servers", "x:1", "schema.registry.url", "http://x")))
                .hasMessageContaining("rollout.table.uri");
        IngestConfig pattern = IngestConfig.of(Map.of(
                "bootstrap.servers", "x:1",
                "schema.registry.url", "http://x",
                "rollout.tables.root", dir.toString(),
                "rollout.input.topic.pattern", "rl-(.+)",
                "rollout.table.route", "${topic.1}"));
        assertThat(pattern.input()
                        .tableRoute()
                        .route("rl-grpo", new RecordHeaders(), null)
                        .table())
                .isEqualTo("grpo");
        assertThat(pattern.input().isInputTopic(new TopicPartition("rl-ppo", 3)))
                .isTrue();
        assertThat(pattern.input().isInputTopic(new TopicPartition("other", 3))).isFalse();
    }
}
