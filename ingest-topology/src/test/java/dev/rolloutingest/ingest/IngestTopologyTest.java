package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
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

class IngestTopologyTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "ttd", UUID.randomUUID().toString()).toAbsolutePath();
    private final RolloutGenerator generator = new RolloutGenerator("exp", 16, 7);
    private RolloutTable table;
    private TopologyTestDriver driver;
    private TestInputTopic<byte[], byte[]> input;
    private TestOutputTopic<String, GenerationSealed> events;
    private TestOutputTopic<byte[], byte[]> dlq;
    private InflightBudget budget;

    private void start(Map<String, Object> overrides) {
        start(overrides, tp -> {
            throw new AssertionError("no recovery expected in a fresh driver");
        });
    }

    /** Partition 0 of the input as a consumer sees it: what the test piped, for the re-reader. */
    private final List<ConsumerRecord<byte[], byte[]>> piped = new java.util.ArrayList<>();

    private Consumer<byte[], byte[]> pipedRecords(TopicPartition tp) {
        MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("none");
        consumer.updateBeginningOffsets(Map.of(tp, 0L));
        consumer.updateEndOffsets(Map.of(tp, (long) piped.size()));
        consumer.schedulePollTask(() -> piped.forEach(consumer::addRecord));
        return consumer;
    }

    private void pipe(byte[] key, byte[] value) {
        piped.add(new ConsumerRecord<>("rollouts", 0, piped.size(), key, value));
        input.pipeInput(key, value);
    }

    private SealWriters writers = new SealWriters(0);
    /** The driver's wall clock at its start, the stream's clock in these tests. */
    private final java.time.Instant wallClockStart = java.time.Instant.now();

    private final IngestHealth health = new IngestHealth();
    private final Map<Integer, Long> sealedPositions = new java.util.concurrent.ConcurrentHashMap<>();

    private void start(Map<String, Object> overrides, Function<TopicPartition, Consumer<byte[], byte[]>> reader) {
        Map<String, Object> values = new HashMap<>(Map.of(
                "bootstrap.servers",
                "unused:9092",
                "schema.registry.url",
                "http://unused:8081",
                "rollout.table.uri",
                dir.resolve("table").toString(),
                "rollout.state.dir",
                dir.resolve("state").toString(),
                "rollout.seal.max.age.ms",
                60_000L));
        values.putAll(overrides);
        IngestConfig config = IngestConfig.of(values);
        table = RolloutTable.createOrOpen(config.tableLocation(), TableSettings.DEFAULTS, meters);
        budget = new InflightBudget(config.maxInflightBlobBytes());
        var topology = IngestTopology.build(
                config,
                TableCatalog.single(table),
                new IngestMetrics(meters, budget),
                budget,
                valueDecoder,
                FixedSchemaSerde.sealedEvents(),
                reader,
                health,
                IngestFaults.NONE,
                writers,
                (tp, offset) -> sealedPositions.merge(tp.partition(), offset, Math::max));
        Properties props = config.streamsProperties();
        props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state").toString());
        driver = new TopologyTestDriver(topology, props, wallClockStart);
        input = driver.createInputTopic("rollouts", new ByteArraySerializer(), new ByteArraySerializer());
        events = driver.createOutputTopic(
                "rollout-generations", new StringDeserializer(), FixedSchemaSerde.sealedEventsReader());
        dlq = driver.createOutputTopic("rollouts-dlq", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    @AfterEach
    void stop() {
        writers.close();
        if (driver != null) {
            driver.close();
        }
        if (table != null) {
            table.close();
        }
    }

    private void send(Rollout rollout) {
        input.pipeInput(rollout.getRecordId().getBytes(StandardCharsets.UTF_8), FixedSchemaSerde.rollout(rollout));
    }

    private double counter(String name, String... tags) {
        var search = meters.find(name);
        if (tags.length > 0) {
            search = search.tags(tags);
        }
        return search.counters().stream().mapToDouble(c -> c.count()).sum();
    }

    @Test
    void aBatchSealsAtMaxRowsAndAnnouncesItsGeneration() {
        start(Map.of("rollout.seal.max.rows", 10));
        for (int i = 0; i < 25; i++) {
            send(generator.rollout(i, 0));
        }
        List<TestRecord<String, GenerationSealed>> sealed = events.readRecordsToList();
        assertThat(sealed).hasSize(2);
        GenerationSealed first = sealed.get(0).value();
        assertThat(sealed.get(0).key()).isEqualTo(ShardId.of("rollouts", 0));
        assertThat(first.getFirstOffset()).isZero();
        assertThat(first.getLastOffset()).isEqualTo(9);
        assertThat(first.getGeneration()).isEqualTo(10);
        assertThat(first.getRows()).isEqualTo(10);
        assertThat(first.getFolder()).isEqualTo("g00000000000000000010-o0-9");
        assertThat(first.getTableUri()).isEqualTo(table.location().uri());
        assertThat(sealed.get(1).value().getFirstOffset()).isEqualTo(10);
        assertThat(sealedPositions)
                .as("the sealed-lag position: the first offset not in the table")
                .containsEntry(0, 20L);
        assertThat(table.generations().pending(ShardId.of("rollouts", 0))).hasSize(2);
        assertThat(table.countRows()).isEqualTo(20);
        assertThat(counter("rollout.ingest.seals", "trigger", "rows", "result", "success"))
                .isEqualTo(2);
    }

    @Test
    void aBatchSealsAtMaxBytes() {
        start(Map.of("rollout.seal.max.bytes", 1_000L));
        for (int i = 0; i < 30; i++) {
            send(generator.rollout(i, 0));
        }
        List<GenerationSealed> sealed = events.readValuesToList();
        assertThat(sealed).isNotEmpty();
        assertThat(sealed).allSatisfy(g -> assertThat(g.getBytes()).isGreaterThanOrEqualTo(1_000L));
        assertThat(counter("rollout.ingest.seals", "trigger", "bytes")).isEqualTo(sealed.size());
    }

    @Test
    void aBatchSealsWhenItsOldestRecordReachesMaxAge() {
        start(Map.of("rollout.seal.max.age.ms", 5_000L, "rollout.seal.check.interval.ms", 100L));
        send(generator.rollout(0, 0));
        send(generator.rollout(1, 0));
        driver.advanceWallClockTime(Duration.ofMillis(1_000));
        assertThat(events.isEmpty()).isTrue();
        // The batch's age counts from its first record on the stream's clock (the driver's here).
        driver.advanceWallClockTime(Duration.ofMillis(4_000));
        GenerationSealed sealed = events.readValue();
        assertThat(sealed.getRows()).isEqualTo(2);
        assertThat(counter("rollout.ingest.seals", "trigger", "age")).isEqualTo(1);
    }

    @Test
    void duplicateKeysInABatchLeaveOneRowWithTheNewestValue() {
        start(Map.of("rollout.seal.max.rows", 6));
        for (int version = 0; version < 3; version++) {
            send(generator.rollout(1, version));
            send(generator.rollout(2, version));
        }
        assertThat(events.readValue().getRows()).isEqualTo(2);
        assertThat(table.get(RolloutGenerator.recordId("exp", 1))
                        .orElseThrow()
                        .rollout()
                        .getPolicyVersion())
                .isEqualTo(2L);
    }

    /** How the topology decodes values: the Avro test serde unless a test says otherwise. */
    private dev.rolloutingest.serde.FieldsDeserializer valueDecoder = FixedSchemaSerde.rollouts();

    @Test
    void aDecoderFailingUnexpectedlyDeadLettersTheRecordAsUndecodableWhateverItsFormat() {
        valueDecoder = new dev.rolloutingest.serde.FieldsDeserializer() {
            @Override
            public <R> R deserializeFields(String topic, byte[] bytes, dev.rolloutingest.serde.FieldReader<R> reader) {
                throw new IllegalStateException("a decoder bug");
            }
        };
        start(Map.of());
        input.pipeInput("x".getBytes(), "{\"record_id\": \"x\"}".getBytes(StandardCharsets.UTF_8));
        List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
        assertThat(dead).singleElement().satisfies(r -> {
            assertThat(header(r, "rollout.dlq.reason")).isEqualTo("undecodable");
            assertThat(header(r, "rollout.dlq.error")).contains("a decoder bug");
        });
    }

    @Test
    void unusableRecordsGoToTheDlqWithTheirReasonAndTheRestIsSealed() {
        start(Map.of(
                "rollout.seal.max.rows",
                3,
                "rollout.max.payload.bytes",
                4_000L,
                "rollout.input.keyless.records",
                "reject"));
        Rollout good = generator.rollout(1, 0);
        byte[] goodBytes = FixedSchemaSerde.rollout(good);
        input.pipeInput("x".getBytes(), "plain text, not Avro".getBytes()); // offset 0
        input.pipeInput("x".getBytes(), dev.rolloutingest.serde.WireFormat.frame(99, new byte[] {2})); // 1
        input.pipeInput((byte[]) null, goodBytes); // 2
        input.pipeInput("other-id".getBytes(), goodBytes); // 3
        Rollout big = new RolloutGenerator("exp", 8_000, 1).rollout(5, 0);
        input.pipeInput(big.getRecordId().getBytes(), FixedSchemaSerde.rollout(big)); // 4
        input.pipeInput((byte[]) null, (byte[]) null); // 5: neither a value nor a key to delete
        byte[] truncated = java.util.Arrays.copyOf(goodBytes, goodBytes.length - 8);
        input.pipeInput(good.getRecordId().getBytes(), truncated); // 6
        for (int i = 10; i < 13; i++) {
            send(generator.rollout(i, 0)); // 7, 8, 9
        }
        List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
        assertThat(dead)
                .extracting(r -> header(r, "rollout.dlq.reason"))
                .containsExactly(
                        "bad-magic-byte",
                        "unknown-schema-id",
                        "missing-key",
                        "key-mismatch",
                        "payload-too-large",
                        "null-value",
                        "not-avro");
        assertThat(dead)
                .extracting(r -> header(r, "rollout.dlq.source.offset"))
                .containsExactly("0", "1", "2", "3", "4", "5", "6");
        assertThat(dead).allSatisfy(r -> {
            assertThat(header(r, "rollout.dlq.source.topic")).isEqualTo("rollouts");
            assertThat(header(r, "rollout.dlq.source.partition")).isEqualTo("0");
            assertThat(header(r, "rollout.dlq.error")).isNotBlank();
        });
        assertThat(dead.get(3).value()).isEqualTo(goodBytes);
        assertThat(dead.get(3).key()).isEqualTo("other-id".getBytes());
        GenerationSealed sealed = events.readValue();
        assertThat(sealed.getFirstOffset()).isZero(); // the range covers the dead letters too
        assertThat(sealed.getLastOffset()).isEqualTo(9);
        assertThat(sealed.getRows()).isEqualTo(3);
        assertThat(counter("rollout.ingest.dlq.records", "reason", "key-mismatch"))
                .isEqualTo(1);
        assertThat(counter("rollout.ingest.dlq.records")).isEqualTo(7);
    }

    @Test
    void aKeyWithoutAValueIsSealedAsADeleteAndAReservedMarkerIsRefused() {
        start(Map.of("rollout.seal.max.rows", 3));
        Rollout kept = generator.rollout(1, 0);
        Rollout deleted = generator.rollout(2, 0);
        send(kept);
        send(deleted);
        Rollout forged = generator.rollout(3, 0);
        forged.setMetadata(Map.of(dev.rolloutingest.table.rows.Tombstones.MARKER, "true"));
        send(forged); // refused: only a null value deletes
        input.pipeInput(deleted.getRecordId().getBytes(StandardCharsets.UTF_8), (byte[]) null);
        assertThat(events.readValue().getRows()).isEqualTo(2); // kept, and the delete that replaced its put
        assertThat(dlq.readRecordsToList())
                .extracting(r -> header(r, "rollout.dlq.reason"))
                .containsExactly(dev.rolloutingest.table.rows.Tombstones.RESERVED_REASON);
        assertThat(table.get(kept.getRecordId().toString())).isPresent();
        assertThat(table.get(deleted.getRecordId().toString())).isEmpty();
        assertThat(table.get(forged.getRecordId().toString())).isEmpty();
        assertThat(counter("rollout.ingest.tombstones")).isEqualTo(1);
    }

    @Test
    void aRecordWithoutAKeyLandsByItsRecordIdAndIsCounted() {
        start(Map.of("rollout.seal.max.rows", 2));
        Rollout keyless = generator.rollout(1, 0);
        input.pipeInput((byte[]) null, FixedSchemaSerde.rollout(keyless));
        send(generator.rollout(2, 0));
        assertThat(dlq.readRecordsToList()).isEmpty();
        assertThat(events.readValue().getRows()).isEqualTo(2);
        assertThat(table.get(keyless.getRecordId().toString())).isPresent();
        assertThat(counter("rollout.ingest.keyless.records")).isEqualTo(1);
    }

    @Test
    void everyPayloadSizeIsRecordedAndTheLargeThresholdIsInclusive() {
        start(Map.of("rollout.large.blob.log.bytes", 16L, "rollout.seal.max.rows", 100));
        send(new RolloutGenerator("exp", 15, 1).rollout(1, 0));
        send(new RolloutGenerator("exp", 16, 1).rollout(2, 0));
        send(new RolloutGenerator("exp", 0, 1).rollout(3, 0));
        var blobs = meters.get("rollout.blob.bytes").summary();
        assertThat(blobs.count()).isEqualTo(3);
        assertThat(blobs.totalAmount()).isEqualTo(31);
        assertThat(blobs.getId().getTags()).isEmpty();
        assertThat(counter("rollout.blob.large")).isEqualTo(1);
    }

    @Test
    void theInflightBudgetSealsEarlyAndHoldsItsCap() {
        long limit = 3L << 20;
        start(Map.of(
                "rollout.max.inflight.blob.bytes",
                limit,
                "rollout.seal.max.rows",
                1_000,
                "rollout.seal.max.bytes",
                48L << 20,
                "rollout.max.payload.bytes",
                2L << 20));
        RolloutGenerator big = new RolloutGenerator("exp", 1 << 20, 3);
        long maxSeen = 0;
        for (int i = 0; i < 12; i++) {
            send(big.rollout(i, 0));
            maxSeen = Math.max(maxSeen, budget.total());
        }
        assertThat(maxSeen).isLessThanOrEqualTo(limit + (1 << 20) + 4096);
        assertThat(counter("rollout.ingest.inflight.pressure")).isGreaterThanOrEqualTo(3);
        assertThat(counter("rollout.ingest.seals", "trigger", "pressure", "result", "success"))
                .isGreaterThanOrEqualTo(3);
        assertThat(events.readValuesToList())
                .extracting(GenerationSealed::getRows)
                .allSatisfy(rows -> assertThat(rows).isLessThanOrEqualTo(4L));
    }

    @Test
    void aRecordTheTableRefusesAtSealTimeIsDeadLetteredWithItsBytesAndTheRestSeals() throws Exception {
        start(Map.of("rollout.seal.max.rows", 10, "rollout.seal.write.attempts", 3), this::pipedRecords);
        Rollout poison = generator.rollout(4, 0);
        TableSeams.failDatasetWrites(table, UnwritableRows.withRecordIdPrefix(poison.getRecordId()));
        for (int i = 0; i < 10; i++) {
            Rollout rollout = generator.rollout(i, 0);
            pipe(rollout.getRecordId().getBytes(StandardCharsets.UTF_8), FixedSchemaSerde.rollout(rollout));
        }
        List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
        assertThat(dead).hasSize(1);
        assertThat(header(dead.get(0), "rollout.dlq.reason")).isEqualTo("unwritable");
        assertThat(header(dead.get(0), "rollout.dlq.error")).contains("injected fault");
        assertThat(header(dead.get(0), "rollout.dlq.source.offset")).isEqualTo("4");
        assertThat(dead.get(0).value()).as("the producer's exact bytes").isEqualTo(FixedSchemaSerde.rollout(poison));
        GenerationSealed first = events.readValue();
        assertThat(first.getFirstOffset()).isZero();
        assertThat(first.getLastOffset()).isEqualTo(9);
        assertThat(first.getRows()).isEqualTo(9);
        assertThat(table.generations().pending(ShardId.of("rollouts", 0)).get(0).deadLettered())
                .extracting(SealedGeneration.DeadLettered::offset)
                .containsExactly(4L);
        assertThat(table.get(poison.getRecordId())).isEmpty();
        assertThat(counter("rollout.ingest.seal.failures", "cause", "data")).isEqualTo(1);
        assertThat(counter("rollout.ingest.dlq.records", "reason", "unwritable"))
                .isEqualTo(1);
        // The partition keeps sealing.
        for (int i = 10; i < 20; i++) {
            Rollout rollout = generator.rollout(i, 0);
            pipe(rollout.getRecordId().getBytes(StandardCharsets.UTF_8), FixedSchemaSerde.rollout(rollout));
        }
        assertThat(events.readValue().getRows()).isEqualTo(10);
        assertThat(table.countRows()).isEqualTo(19);
    }

    @Test
    void aStoreThatFailsEveryWriteIsRetriedAndNeverBlamesTheRecords() {
        start(Map.of("rollout.seal.max.rows", 5, "rollout.seal.write.attempts", 2), this::pipedRecords);
        TableSeams.failDatasetWrites(table, null);
        // Writes fail only at the table's location: the probe writes to memory and succeeds, so the data is fine.
        Path blocked = Path.of(table.location().uri()).resolve("_mem_wal");
        try {
            java.nio.file.Files.createDirectories(blocked.getParent());
            java.nio.file.Files.writeString(blocked, "not a folder");
            for (int i = 0; i < 4; i++) {
                Rollout rollout = generator.rollout(i, 0);
                pipe(rollout.getRecordId().getBytes(StandardCharsets.UTF_8), FixedSchemaSerde.rollout(rollout));
            }
            Rollout fifth = generator.rollout(4, 0);
            assertThatThrownBy(() ->
                            pipe(fifth.getRecordId().getBytes(StandardCharsets.UTF_8), FixedSchemaSerde.rollout(fifth)))
                    .hasStackTraceContaining("failed 2 times");
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        assertThat(dlq.isEmpty()).isTrue();
        assertThat(counter("rollout.ingest.seal.failures", "cause", "storage")).isEqualTo(2);
        assertThat(counter("rollout.ingest.seal.failures", "cause", "data")).isZero();
    }

    @Test
    void producerHeadersThatSpoofOurDeadLetterHeadersAreKeptUnderAnotherName() {
        start(Map.of("rollout.seal.max.rows", 100));
        var headers = new org.apache.kafka.common.header.internals.RecordHeaders();
        headers.add("rollout.dlq.reason", "all-good".getBytes());
        headers.add("trace", "t1".getBytes());
        input.pipeInput(new TestRecord<>("x".getBytes(), "not avro".getBytes(), headers, Instant.now()));
        TestRecord<byte[], byte[]> dead = dlq.readRecord();
        assertThat(dead.headers().headers("rollout.dlq.reason"))
                .extracting(h -> new String(h.value()))
                .containsExactly("bad-magic-byte");
        assertThat(header(dead, "producer.rollout.dlq.reason")).isEqualTo("all-good");
        assertThat(header(dead, "trace")).isEqualTo("t1");
    }

    @Test
    void aGenerationIsWrittenOffTheStreamThreadWhileTheNextBatchFillsAndAnnouncedWhenDone() throws Exception {
        writers = new SealWriters(1);
        // No age seal however long the polls below advance the driver's clock: only rows seal here.
        start(Map.of(
                "rollout.seal.max.rows",
                5,
                "rollout.seal.check.interval.ms",
                50L,
                "rollout.seal.max.age.ms",
                3_600_000L));
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicInteger writes = new java.util.concurrent.atomic.AtomicInteger();
        TableSeams.failDatasetWrites(table, batch -> {
            writes.incrementAndGet();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        });
        for (int i = 0; i < 9; i++) {
            send(generator.rollout(i, 0)); // the 5th seals; 6..9 fill the next batch while it is written
        }
        assertThat(events.isEmpty()).as("not announced while the write runs").isTrue();
        assertThat(budget.total())
                .as("the batch being written still counts against the budget")
                .isGreaterThan(5 * 20L);
        release.countDown();
        // The write runs on the writer thread: poll for its announcement, generously for a loaded machine.
        long deadline = System.currentTimeMillis() + 60_000;
        while (events.isEmpty() && System.currentTimeMillis() < deadline) {
            driver.advanceWallClockTime(Duration.ofMillis(50));
            Thread.sleep(20);
        }
        GenerationSealed first = events.readValue();
        assertThat(first.getFirstOffset()).isZero();
        assertThat(first.getLastOffset()).isEqualTo(4);
        send(generator.rollout(9, 0)); // the 10th seals the second batch
        deadline = System.currentTimeMillis() + 60_000;
        while (events.isEmpty() && System.currentTimeMillis() < deadline) {
            driver.advanceWallClockTime(Duration.ofMillis(50));
            Thread.sleep(20);
        }
        assertThat(events.readValue().getFirstOffset()).isEqualTo(5);
        assertThat(table.countRows()).isEqualTo(10);
        assertThat(budget.total()).isZero();
    }

    @Test
    void aBatchStartedWhileThePreviousIsWrittenAgesFromItsOwnFirstRecord() throws Exception {
        writers = new SealWriters(1);
        start(Map.of(
                "rollout.seal.max.rows", 5, "rollout.seal.check.interval.ms", 100L, "rollout.seal.max.age.ms", 5_000L));
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        TableSeams.failDatasetWrites(table, batch -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        });
        for (int i = 0; i < 5; i++) {
            send(generator.rollout(i, 0)); // the 5th seals by rows; its write waits for the release
        }
        driver.advanceWallClockTime(Duration.ofMillis(3_000));
        send(generator.rollout(5, 0)); // the next batch's first record, 3 s after the first batch's
        release.countDown();
        long deadline = System.currentTimeMillis() + 60_000;
        int polls = 0;
        while (events.isEmpty() && System.currentTimeMillis() < deadline) {
            driver.advanceWallClockTime(Duration.ofMillis(1));
            polls++;
            Thread.sleep(10);
        }
        assertThat(events.readValue().getLastOffset()).isEqualTo(4);
        assertThat(polls).as("the poll above moved the clock by at most 1.5 s").isLessThan(1_500);
        // 5.5 s after the first batch began, 2.5 s after the second did: the second is not due yet, nor stuck.
        driver.advanceWallClockTime(Duration.ofMillis(2_500 - polls));
        assertThat(health.stuck(
                        Set.of(new TopicPartition("rollouts", 0)), true, wallClockStart.toEpochMilli() + 5_500, 4_000))
                .as("the partition's unsealed records wait since the second batch began, not the first")
                .isEmpty();
        // An age seal would be written and announced within these 300 checks (3 s, the clock moved 0.3 s).
        for (int i = 0; i < 300 && events.isEmpty(); i++) {
            driver.advanceWallClockTime(Duration.ofMillis(1));
            Thread.sleep(10);
        }
        assertThat(events.isEmpty())
                .as("a batch begun while the previous one was written seals 5 s after its own first record")
                .isTrue();
        driver.advanceWallClockTime(Duration.ofMillis(2_300));
        deadline = System.currentTimeMillis() + 60_000;
        while (events.isEmpty() && System.currentTimeMillis() < deadline) {
            driver.advanceWallClockTime(Duration.ofMillis(1));
            Thread.sleep(10);
        }
        GenerationSealed second = events.readValue();
        assertThat(second.getFirstOffset()).isEqualTo(5);
        assertThat(second.getRows()).isEqualTo(1);
        assertThat(counter("rollout.ingest.seals", "trigger", "age")).isEqualTo(1);
    }

    private static String header(TestRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }
}
