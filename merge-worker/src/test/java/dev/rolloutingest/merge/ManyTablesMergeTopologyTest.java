package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.AvroContracts;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The scheduler over several tables with TopologyTestDriver, real local tables and real rounds on the shared merge capacity:
 * one table broken by hand (a fragment of its base deleted) cools down alone, named by its URI and shard, while the
 * healthy tables keep merging and keep their upkeep.
 */
class ManyTablesMergeTopologyTest {
    private static final String TOPIC = "rollouts";
    private static final List<String> NAMES = List.of("t0", "t1", "broken", "t3");
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Path dir =
            Path.of("target", "ttd", UUID.randomUUID().toString()).toAbsolutePath();
    private final Map<String, Long> nextOffset = new HashMap<>();
    private final List<String> warnings = new CopyOnWriteArrayList<>();
    private TableCatalog catalog;
    private MergeTables tables;
    private TableMaintenanceRunner maintenance;
    private TopologyTestDriver driver;
    private TestInputTopic<String, GenerationSealed> sealed;
    private TestOutputTopic<String, GenerationsMerged> merged;
    private AbstractAppender capture;

    static {
        AvroContracts.trust();
    }

    private void start(Map<String, Object> overrides) {
        start(overrides, 1);
    }

    /** {@code eventPartitions}: of the sealed topic; the driver runs the task of partition 0. */
    private void start(Map<String, Object> overrides, int eventPartitions) {
        Map<String, Object> values = new HashMap<>(Map.of(
                "bootstrap.servers",
                "unused:9092",
                "schema.registry.url",
                "http://unused:8081",
                "rollout.tables.root",
                dir.resolve("tables").toString(),
                "rollout.state.dir",
                dir.resolve("state").toString(),
                "rollout.merge.max.pending.age.ms",
                0L,
                "rollout.gc.interval.ms",
                0L,
                "rollout.compaction.interval.ms",
                0L,
                "rollout.index.optimize.interval.ms",
                0L));
        values.putAll(overrides);
        MergeConfig config = MergeConfig.of(values);
        catalog = config.openTables(meters);
        NAMES.forEach(catalog::createOrOpen);
        MergeMetrics metrics = new MergeMetrics(meters);
        tables = new MergeTables(catalog, new ShardMerges(metrics, 0, result -> {}));
        maintenance = new TableMaintenanceRunner(metrics, 2, Duration.ofMinutes(5));
        var topology = MergeTopology.build(
                config,
                tables,
                maintenance,
                metrics,
                eventPartitions,
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
        captureWarnings();
    }

    private void captureWarnings() {
        capture = new AbstractAppender("cooldown-warnings", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                    warnings.add(event.getMessage().getFormattedMessage());
                }
            }
        };
        capture.start();
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        context.getLogger(MergeScheduler.class.getName()).addAppender(capture);
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

    @AfterEach
    void stop() {
        if (capture != null) {
            LoggerContext context = (LoggerContext) LogManager.getContext(false);
            context.getLogger(MergeScheduler.class.getName()).removeAppender(capture);
        }
        if (driver != null) {
            driver.close();
        }
        if (tables != null) {
            tables.close();
        }
        if (maintenance != null) {
            maintenance.close();
        }
        if (catalog != null) {
            catalog.close();
        }
    }

    private RolloutTable table(String name) {
        return tables.of(name).orElseThrow().table();
    }

    /** Seals one generation of 10 records (keys repeat every 25 offsets: later ones update the base) and announces it. */
    private void seal(String name, int partition) {
        String stream = name + "/" + partition;
        long first = nextOffset.getOrDefault(stream, 0L);
        long last = first + 9;
        nextOffset.put(stream, last + 1);
        RolloutGenerator generator = new RolloutGenerator("exp", 8, partition);
        List<RolloutRow> rows = new ArrayList<>();
        for (long o = first; o <= last; o++) {
            var rollout = generator.rollout(o % 25, (int) o);
            rollout.setRecordId("p" + partition + "-" + rollout.getRecordId());
            rows.add(new RolloutRow(rollout, partition, o, Instant.now()));
        }
        RolloutTable table = table(name);
        SealedGeneration g = table.generations().write(TOPIC, partition, first, last, rows, 1000);
        sealed.pipeInput(
                g.shard(),
                GenerationSealed.newBuilder()
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
                        .build());
    }

    /** Lets running rounds finish (real time), then lets the scheduler apply them and start the next ones. */
    private void settle() throws InterruptedException {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
            if (anyRunning()) {
                continue;
            }
            driver.advanceWallClockTime(Duration.ofMillis(250));
            if (!anyRunning()) {
                driver.advanceWallClockTime(Duration.ofMillis(250));
                if (!anyRunning()) {
                    return;
                }
            }
        }
        throw new AssertionError("rounds did not settle within 120 s");
    }

    private boolean anyRunning() {
        return tables.active().stream().anyMatch(m -> m.table().generations().shards().stream()
                .anyMatch(shard -> tables.passes().running(tables.key(m.name(), shard))));
    }

    private int pending(String name, int partition) {
        return table(name).generations().pending(ShardId.of(TOPIC, partition)).size();
    }

    private double tableGauge(String name, String table) {
        return meters.get(name).tag("table", table).gauge().value();
    }

    /** Deletes a data file of the table's base by hand: its manifest still names it. */
    private void breakBase(String name) throws IOException {
        Path data = Path.of(table(name).location().resolve("data"));
        try (Stream<Path> files = Files.list(data)) {
            // The second oldest: the oldest's rows were all updated since (lance dropped it); this one still holds
            // live rows that the next rounds update.
            Path victim = files.filter(f -> f.toString().endsWith(".lance"))
                    .sorted(java.util.Comparator.comparing(ManyTablesMergeTopologyTest::modified))
                    .skip(1)
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("too few base fragments under " + name));
            Files.delete(victim);
        }
    }

    private static java.nio.file.attribute.FileTime modified(Path file) {
        try {
            return Files.getLastModifiedTime(file);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aTaskMergesTheTableShardsTheSealedTopicsKeyGivesItsPartitionAndLeavesTheOthers() throws Exception {
        start(Map.of("rollout.merge.after.generations", 1), 2);
        String shard = ShardId.of(TOPIC, 0);
        List<String> mine = NAMES.stream()
                .filter(name ->
                        Utils.toPositive(Utils.murmur2(tables.key(name, shard).getBytes(StandardCharsets.UTF_8))) % 2
                                == 0)
                .toList();
        List<String> others =
                NAMES.stream().filter(name -> !mine.contains(name)).toList();
        assertThat(mine).as("tables of one shard whose keys are partition 0's").isNotEmpty();
        assertThat(others)
                .as("tables of the same shard whose keys are partition 1's")
                .isNotEmpty();
        // Every event reaches this task, keyed by the shard alone (as before tables had keys of their own).
        for (String name : NAMES) {
            seal(name, 0);
        }
        settle();
        assertThat(mine)
                .allSatisfy(name -> assertThat(pending(name, 0)).as(name).isZero());
        assertThat(others)
                .as("left to the task of partition 1")
                .allSatisfy(name -> assertThat(pending(name, 0)).as(name).isEqualTo(1));
    }

    @Test
    void aTaskKeepsUpOnlyTheTablesWhoseNameHashesToItsPartition() throws Exception {
        start(Map.of("rollout.index.optimize.interval.ms", 1_000L, "rollout.index.max.unindexed.rows", 1L), 2);
        List<String> upkept = new CopyOnWriteArrayList<>();
        AbstractAppender upkeep = new AbstractAppender("upkeep", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                String message = event.getMessage().getFormattedMessage();
                if (message.contains("record_id_idx index")) {
                    upkept.add(message);
                }
            }
        };
        upkeep.start();
        org.apache.logging.log4j.core.Logger logger = ((LoggerContext) LogManager.getContext(false))
                .getLogger(dev.rolloutingest.table.maintenance.KeyIndex.class.getName());
        logger.addAppender(upkeep);
        org.apache.logging.log4j.Level level = logger.getLevel();
        logger.setLevel(Level.INFO);
        try {
            // every table gets a few base fragments, merged outside the task (as another instance would)
            for (String name : NAMES) {
                for (int i = 0; i < 3; i++) {
                    RolloutTable table = table(name);
                    long first = 100L * i;
                    List<RolloutRow> rows = new ArrayList<>();
                    for (long o = first; o < first + 10; o++) {
                        rows.add(new RolloutRow(
                                new RolloutGenerator(name, 8, 0).rollout(o, (int) o), 0, o, Instant.now()));
                    }
                    table.generations().write(TOPIC, 0, first, first + 9, rows, 1000);
                    table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
                }
            }
            driver.advanceWallClockTime(Duration.ofMillis(1_500));
            List<String> mine = NAMES.stream()
                    .filter(name -> Utils.toPositive(Utils.murmur2(name.getBytes(StandardCharsets.UTF_8))) % 2 == 0)
                    .toList();
            assertThat(mine)
                    .as("tables whose upkeep is partition 0's")
                    .isNotEmpty()
                    .hasSizeLessThan(NAMES.size());
            long deadline = System.currentTimeMillis() + 60_000;
            while (upkept.size() < mine.size() && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
            }
            Thread.sleep(500); // upkeep of another task's table would have logged by now too
            for (String name : NAMES) {
                String uri = table(name).location().toString();
                boolean done = upkept.stream().anyMatch(m -> m.contains("/" + name + ": "));
                assertThat(done)
                        .as(name + " index kept up (" + uri + "): " + upkept)
                        .isEqualTo(mine.contains(name));
            }
        } finally {
            logger.removeAppender(upkeep);
            logger.setLevel(level);
        }
    }

    @Test
    void aBrokenTableCoolsDownAloneNamingItsUriAndShardWhileTheHealthyTablesKeepMerging() throws Exception {
        // the book of key addresses off: the rounds read the base rows they update, the broken fragment's among them
        // (with it, a row it places is replaced without a read, and the broken fragment's file is never opened)
        start(Map.of(
                "rollout.merge.key.addresses.bytes",
                0L,
                "rollout.merge.after.generations",
                1,
                "rollout.merge.max.generations",
                2,
                "task.cooldown.after.failures",
                3,
                "rollout.index.optimize.interval.ms",
                60_000L,
                "rollout.index.max.unindexed.rows",
                1L));
        for (int round = 0; round < 4; round++) { // a few base fragments, one still live besides the newest
            for (String name : NAMES) {
                seal(name, 0);
            }
            settle();
        }
        assertThat(NAMES).allSatisfy(name -> assertThat(pending(name, 0)).isZero());
        merged.readValuesToList();
        breakBase("broken");

        for (int attempt = 0; attempt < 6; attempt++) {
            for (String name : NAMES) {
                seal(name, 0);
            }
            settle();
        }

        String shard = ShardId.of(TOPIC, 0);
        String brokenUri = table("broken").location().uri();
        KeyValueStore<String, Cooldown> cooldowns = driver.getKeyValueStore(MergeStores.COOLDOWN_STORE);
        Cooldown cooldown = cooldowns.get(Cooldown.key("merge", tables.key("broken", shard)));
        assertThat(cooldown).as("the broken table's shard is in a cooldown").isNotNull();
        assertThat(cooldown.failures()).isEqualTo(3);
        assertThat(cooldown.activeAt(System.currentTimeMillis())).isTrue();
        assertThat(cooldown.lastError()).isNotBlank();
        assertThat(warnings)
                .as("the cooldown WARN names the table URI, the shard and the last error")
                .anySatisfy(w -> assertThat(w)
                        .contains("merge of table " + brokenUri + " shard " + shard)
                        .contains("failed 3 times in a row")
                        .contains(cooldown.lastError()));
        for (String name : List.of("t0", "t1", "t3")) {
            assertThat(pending(name, 0))
                    .as("healthy table %s keeps merging", name)
                    .isZero();
            assertThat(cooldowns.get(Cooldown.key("merge", tables.key(name, shard))))
                    .isNull();
        }
        assertThat(pending("broken", 0)).isPositive();
        assertThat(tableGauge("rollout.merge.table.cooling.shards", "broken"))
                .as("the per-table gauge an alert names the table by")
                .isEqualTo(1);
        assertThat(tableGauge("rollout.merge.table.pending.generations", "broken"))
                .isEqualTo(pending("broken", 0));
        for (String name : List.of("t0", "t1", "t3")) {
            assertThat(tableGauge("rollout.merge.table.cooling.shards", name)).isZero();
            assertThat(tableGauge("rollout.merge.table.pending.generations", name))
                    .isZero();
        }
        assertThat(merged.readValuesToList())
                .extracting(GenerationsMerged::getTableUri)
                .contains(table("t0").location().uri(), table("t3").location().uri())
                .doesNotContain(brokenUri);

        // The key index upkeep of the broken table fails alone: a failure counted against its URI, none for the others.
        driver.advanceWallClockTime(Duration.ofSeconds(60));
        for (int i = 0; i < 120 && cooldowns.get(Cooldown.key("index", brokenUri)) == null; i++) {
            Thread.sleep(250);
            driver.advanceWallClockTime(Duration.ofMillis(250)); // the tick applies finished upkeep
        }
        assertThat(cooldowns.get(Cooldown.key("index", brokenUri)))
                .as("the broken table's index upkeep failed and counts towards its cooldown")
                .isNotNull()
                .satisfies(c -> assertThat(c.lastError()).containsIgnoringCase("not found"));
        for (String name : List.of("t0", "t1", "t3")) {
            assertThat(cooldowns.get(
                            Cooldown.key("index", table(name).location().uri())))
                    .isNull();
        }
    }
}
