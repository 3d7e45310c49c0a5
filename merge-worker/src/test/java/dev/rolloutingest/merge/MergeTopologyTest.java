package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.schemas.AvroContracts;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The scheduler with TopologyTestDriver, a real local table and real passes on worker threads. */
class MergeTopologyTest {
    private static final String TOPIC = "rollouts";
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "ttd", UUID.randomUUID().toString()).toAbsolutePath();
    private RolloutTable table;
    private MergeTables tables;
    private TableMaintenanceRunner maintenance;
    private TopologyTestDriver driver;
    private TestInputTopic<String, GenerationSealed> sealed;
    private TestOutputTopic<String, GenerationsMerged> merged;
    private final Map<Integer, Long> nextOffset = new HashMap<>();

    static {
        AvroContracts.trust();
    }

    private void start(Map<String, Object> overrides) {
        Map<String, Object> values = new HashMap<>(Map.of(
                "bootstrap.servers",
                "unused:9092",
                "schema.registry.url",
                "http://unused:8081",
                "rollout.table.uri",
                dir.resolve("table").toString(),
                "rollout.state.dir",
                dir.resolve("state").toString(),
                "rollout.merge.max.pending.age.ms",
                0L,
                "rollout.compaction.interval.ms",
                0L,
                "rollout.gc.interval.ms",
                0L));
        values.putAll(overrides);
        MergeConfig config = MergeConfig.of(values);
        table = RolloutTable.createOrOpen(config.tableLocation(), config.tableSettings(), meters);
        MergeMetrics metrics = new MergeMetrics(meters);
        tables = new MergeTables(TableCatalog.single(table), new ShardMerges(metrics, 0, result -> {}));
        // Avro single-object encoding stands in for the registry serde here; the ITs use the real one.
        maintenance = new TableMaintenanceRunner(metrics);
        var topology = MergeTopology.build(
                config,
                tables,
                maintenance,
                metrics,
                1,
                (topic, bytes) -> decode(() -> GenerationSealed.fromByteBuffer(java.nio.ByteBuffer.wrap(bytes))),
                (topic, event) -> decode(() -> event.toByteBuffer().array()),
                (tp, offset) -> {});
        Properties props = config.streamsProperties();
        props.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state").toString());
        driver = new TopologyTestDriver(topology, props);
        sealed = driver.createInputTopic(
                "rollout-generations",
                new StringSerializer(),
                (topic, event) -> decode(() -> event.toByteBuffer().array()));
        merged = driver.createOutputTopic(
                "rollout-merges",
                new StringDeserializer(),
                (topic, bytes) -> decode(() -> GenerationsMerged.fromByteBuffer(java.nio.ByteBuffer.wrap(bytes))));
    }

    interface IoCall<T> {
        T call() throws IOException;
    }

    private static <T> T decode(IoCall<T> call) {
        try {
            return call.call();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** A manual pass, as the admin API asks for one. */
    private ShardMerges.Outcome manual(String shard) throws Exception {
        return tables.passes().manual(shard, table, shard).get();
    }

    @AfterEach
    void stop() {
        if (driver != null) {
            driver.close();
        }
        if (tables != null) {
            tables.close();
        }
        if (maintenance != null) {
            maintenance.close();
        }
        if (table != null) {
            table.close();
        }
    }

    /** Seals one generation of 10 records in the table and announces it. */
    private SealedGeneration seal(int partition) {
        SealedGeneration g = sealQuietly(partition);
        announce(g);
        return g;
    }

    private void announce(SealedGeneration g) {
        GenerationSealed event = GenerationSealed.newBuilder()
                .setShardId(g.shard())
                .setTopic(TOPIC)
                .setPartition(g.partition())
                .setGeneration(g.generation())
                .setFolder(g.folder())
                .setFirstOffset(g.firstOffset())
                .setLastOffset(g.lastOffset())
                .setRows(g.rows())
                .setBytes(g.bytes())
                .setSealedAt(g.sealedAt())
                .setTableUri(table.location().uri())
                .build();
        sealed.pipeInput(g.shard(), event);
    }

    /** Seals one generation of 10 records in the table without its event. */
    private SealedGeneration sealQuietly(int partition) {
        long first = nextOffset.getOrDefault(partition, 0L);
        long last = first + 9;
        nextOffset.put(partition, last + 1);
        RolloutGenerator generator = new RolloutGenerator("exp", 8, partition);
        List<RolloutRow> rows = new ArrayList<>();
        for (long o = first; o <= last; o++) {
            var rollout = generator.rollout(o % 25, (int) o);
            rollout.setRecordId("p" + partition + "-" + rollout.getRecordId());
            rows.add(new RolloutRow(rollout, partition, o, Instant.now()));
        }
        return table.generations().write(TOPIC, partition, first, last, rows, 1000);
    }

    /**
     * Lets running passes finish, then lets the scheduler apply them (and start the next ones). Passes run on
     * worker threads, in real time: the deadline is generous for a loaded machine, and the driver's clock moves
     * only once they are done, so a slow pass does not make scheduler time (cooldowns, ages) run ahead.
     */
    private void settle() throws InterruptedException {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
            if (table.generations().shards().stream().anyMatch(tables.passes()::running)) {
                continue;
            }
            driver.advanceWallClockTime(Duration.ofMillis(250));
            if (table.generations().shards().stream().noneMatch(tables.passes()::running)) {
                driver.advanceWallClockTime(Duration.ofMillis(250));
                if (table.generations().shards().stream().noneMatch(tables.passes()::running)) {
                    return;
                }
            }
        }
        throw new AssertionError("passes did not settle within 120 s");
    }

    private int pending(int partition) {
        return table.generations().pending(ShardId.of(TOPIC, partition)).size();
    }

    @Test
    void theCountTriggerMergesAtTheThresholdAndNothingBelowIt() throws Exception {
        start(Map.of("rollout.merge.after.generations", 4, "rollout.merge.max.generations", 8));
        for (int i = 0; i < 3; i++) {
            seal(0);
        }
        settle();
        assertThat(pending(0)).isEqualTo(3);
        assertThat(merged.isEmpty()).isTrue();
        seal(0);
        settle();
        assertThat(pending(0)).isZero();
        GenerationsMerged event = merged.readValue();
        assertThat(event.getTrigger()).isEqualTo(MergeTrigger.COUNT);
        assertThat(event.getMergedGenerations()).containsExactly(10L, 20L, 30L, 40L);
        assertThat(event.getNewWatermark()).isEqualTo(40L);
        assertThat(owned(0).announcedUpTo()).isEqualTo(40L);
    }

    @Test
    void zeroDisablesTheCountTriggerWhileTheTimeTriggerStillDrains() throws Exception {
        start(Map.of(
                "rollout.merge.after.generations",
                0,
                "rollout.merge.max.generations",
                3,
                "rollout.merge.max.pending.age.ms",
                60_000L));
        for (int i = 0; i < 7; i++) {
            seal(0);
        }
        settle();
        assertThat(pending(0)).as("0 is 'disabled', not 'threshold 0'").isEqualTo(7);
        driver.advanceWallClockTime(Duration.ofMinutes(2));
        for (int i = 0; i < 5; i++) {
            settle();
        }
        assertThat(pending(0)).isZero();
        List<GenerationsMerged> events = merged.readValuesToList();
        assertThat(events).extracting(GenerationsMerged::getTrigger).containsOnly(MergeTrigger.TIME);
        assertThat(events).allSatisfy(e -> assertThat(e.getMergedGenerations()).hasSizeLessThanOrEqualTo(3));
    }

    @Test
    void aBacklogOfFiftyDrainsPassAfterPassWithinTheCap() throws Exception {
        start(Map.of("rollout.merge.after.generations", 1, "rollout.merge.max.generations", 8));
        for (int i = 0; i < 50; i++) {
            seal(0);
        }
        for (int i = 0; i < 10 && pending(0) > 0; i++) {
            settle();
        }
        assertThat(pending(0)).isZero();
        List<GenerationsMerged> events = merged.readValuesToList();
        List<Long> all =
                events.stream().flatMap(e -> e.getMergedGenerations().stream()).toList();
        assertThat(events).allSatisfy(e -> assertThat(e.getMergedGenerations()).hasSizeLessThanOrEqualTo(8));
        assertThat(all).hasSize(50).doesNotHaveDuplicates().isSorted();
        assertThat(table.countBaseRows()).isEqualTo(25);
    }

    @Test
    void aPoisonShardCoolsDownAfterThreeFailuresWhileAHealthyShardKeepsMerging() throws Exception {
        start(Map.of(
                "rollout.merge.after.generations",
                1,
                "rollout.merge.max.generations",
                2,
                "task.cooldown.after.failures",
                3));
        // Its files go before its event: announced first, its pass could run (and merge it) before the delete.
        SealedGeneration poisoned = sealQuietly(0);
        FileTrees.deleteRecursively(Path.of(table.location().resolve(poisoned.datasetPath())));
        announce(poisoned);
        String poison = ShardId.of(TOPIC, 0);
        for (int attempt = 0; attempt < 6; attempt++) {
            seal(1);
            settle();
        }
        KeyValueStore<String, Cooldown> cooldowns = driver.getKeyValueStore(MergeStores.COOLDOWN_STORE);
        Cooldown cooldown = cooldowns.get(Cooldown.key("merge", poison));
        assertThat(cooldown.failures()).isEqualTo(3);
        assertThat(cooldown.activeAt(System.currentTimeMillis())).isTrue();
        assertThat(cooldown.lastError()).contains("generation 10");
        assertThat(meters.get("merge.cooldowns").counter().count()).isEqualTo(1);
        assertThat(meters.get("rollout.merge.skipped.cooldown").counter().count())
                .isPositive();
        assertThat(pending(1)).isZero();
        assertThat(merged.readValuesToList())
                .extracting(GenerationsMerged::getShardId)
                .containsOnly(ShardId.of(TOPIC, 1));
        // A manual merge is never gated: it runs (and fails again, counting a fourth failure).
        ShardMerges.Outcome manual = manual(poison);
        assertThat(manual.failed()).isTrue();
        settle();
        assertThat(cooldowns.get(Cooldown.key("merge", poison)).failures()).isEqualTo(4);
    }

    @Test
    void aSuccessClearsTheFailureRecord() throws Exception {
        start(Map.of("rollout.merge.after.generations", 1, "task.cooldown.after.failures", 3));
        // Its files go aside before its event, as in the poison test: announced first, it could be merged at once.
        SealedGeneration g = sealQuietly(0);
        Path folder = Path.of(table.location().resolve(g.datasetPath()));
        Path aside = folder.resolveSibling("aside");
        Files.move(folder, aside);
        announce(g);
        settle();
        KeyValueStore<String, Cooldown> cooldowns = driver.getKeyValueStore(MergeStores.COOLDOWN_STORE);
        assertThat(cooldowns.get(Cooldown.key("merge", g.shard()))).isNotNull();
        Files.move(aside, folder);
        // Retried on every check, the shard may already be cooling down: the manual pass is never gated.
        assertThat(manual(g.shard()).failed()).isFalse();
        settle();
        assertThat(pending(0)).isZero();
        assertThat(cooldowns.get(Cooldown.key("merge", g.shard()))).isNull();
    }

    @Test
    void theBacklogIsTheTablesSoAGenerationWhoseEventHasNotComeCountsTowardsTheTrigger() throws Exception {
        start(Map.of("rollout.merge.after.generations", 2));
        seal(0); // the event makes the shard this task's
        settle();
        assertThat(pending(0)).as("one generation: under the trigger of 2").isEqualTo(1);
        SealedGeneration quiet = sealQuietly(0); // sealed, its event not read yet
        settle();
        assertThat(pending(0))
                .as("the table's two pending generations trigger the pass, no event needed")
                .isZero();
        GenerationsMerged event = merged.readValue();
        assertThat(event.getTrigger()).isEqualTo(MergeTrigger.COUNT);
        assertThat(event.getMergedGenerations()).containsExactly(10L, quiet.generation());
        announce(quiet); // the late event wakes the task: nothing is left to merge or announce
        settle();
        assertThat(merged.isEmpty()).isTrue();
        assertThat(owned(0).announcedUpTo()).isEqualTo(quiet.generation());
    }

    @Test
    void aMergeWhoseEventWasLostIsAnnouncedOnceAsReconcile() throws Exception {
        start(Map.of("rollout.merge.after.generations", 1));
        seal(0);
        settle();
        assertThat(merged.readValue().getTrigger()).isEqualTo(MergeTrigger.COUNT);
        // A pass that committed to Lance and died before its event: the table moved, nobody said so.
        SealedGeneration lost = sealQuietly(0);
        table.merges().pass(MergeRequest.of(lost.shard()).limits(8, 0));
        announce(lost); // its GenerationSealed event arrives after the merge
        settle();
        GenerationsMerged reconcile = merged.readValue();
        assertThat(reconcile.getTrigger()).isEqualTo(MergeTrigger.RECONCILE);
        assertThat(reconcile.getMergedGenerations()).containsExactly(lost.generation());
        announce(lost); // a replayed event of an announced generation changes nothing
        settle();
        assertThat(merged.isEmpty()).isTrue();
        assertThat(owned(0).announcedUpTo()).isEqualTo(lost.generation());
    }

    @Test
    void aLostMergeIsAnnouncedEvenWhenALaterPassIsAnnouncedBeforeItsSealedEventsAreReadAgain() throws Exception {
        start(Map.of("rollout.merge.after.generations", 1));
        seal(0);
        settle();
        assertThat(merged.readValue().getTrigger()).isEqualTo(MergeTrigger.COUNT);
        // A worker merged two generations and died before announcing them or committing their sealed events.
        SealedGeneration lostA = sealQuietly(0);
        SealedGeneration lostB = sealQuietly(0);
        table.merges().pass(MergeRequest.of(lostA.shard()).limits(8, 0));
        // The next generation's event arrives first: its pass runs (the watermark is past lostA and lostB) ...
        seal(0);
        settle();
        List<GenerationsMerged> events = merged.readValuesToList();
        assertThat(events).extracting(GenerationsMerged::getTrigger).contains(MergeTrigger.RECONCILE);
        assertThat(events)
                .filteredOn(e -> e.getTrigger() == MergeTrigger.RECONCILE)
                .singleElement()
                .satisfies(e ->
                        assertThat(e.getMergedGenerations()).containsExactly(lostA.generation(), lostB.generation()));
        // ... and the re-read sealed events of the lost generations change nothing.
        announce(lostA);
        announce(lostB);
        settle();
        assertThat(merged.isEmpty()).isTrue();
    }

    /** The shard as this task keeps it: what its events announced. */
    private OwnedShard owned(int partition) {
        KeyValueStore<String, OwnedShard> store = driver.getKeyValueStore(MergeStores.SHARD_STORE);
        return store.get(ShardId.of(TOPIC, partition));
    }
}
