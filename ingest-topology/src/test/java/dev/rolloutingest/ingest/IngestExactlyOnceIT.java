package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The core promise, end to end on a real broker, registry and table: the app runs in its own JVM and is
 * SIGKILLed at random points (and once halted right after a generation write, before its commit), then
 * restarted; every produced record_id is readable exactly once with its latest value, and the announced
 * generations tile each partition's offsets with no gap and no overlap.
 */
class IngestExactlyOnceIT {
    private static final Path ROOT = Path.of("target", "it-ingest").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-ingest");

    private static final int PARTITIONS = 3;
    private static final int FAST_RECORDS = 15_000;

    @Test
    void killedAtRandomPointsEveryRecordLandsExactlyOnceWithItsLatestValue() throws Exception {
        String run = "eo-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String events = run + "-generations";
        cluster.createRunTopics(run, input, PARTITIONS);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Path config = cluster.instanceConfig(run, input, work, "ingest", Map.of());

        int records = 3_000;
        int keys = 1_100;
        int firstWave = 600;
        Map<String, Long> latestVersion = new TreeMap<>();
        AtomicLong produced = new AtomicLong();
        Path log = work.resolve("ingest.log");

        // A: every record processed and its offset committed, nothing sealed, then SIGKILL. The restart must
        // re-read the buffered records from the topic: Streams already committed their offsets.
        cluster.produce(input, 0, firstWave, keys, latestVersion, produced, 0);
        ChildJvm app = ChildJvm.start(
                IngestApp.class,
                List.of(config.toString()),
                Map.of("ROLLOUT_SEAL_MAX_ROWS", "1000000", "ROLLOUT_SEAL_MAX_AGE_MS", "3600000"),
                log);
        cluster.awaitCommitted(run, input, PARTITIONS, 120);
        app.kill();
        // B: a crash right after a generation write, before its event and offsets commit: adopted on restart.
        app = ChildJvm.start(
                FaultyIngestApp.class, List.of(config.toString()), Map.of("ROLLOUT_FAULT_HALT_AFTER_WRITES", "2"), log);
        assertThat(app.waitFor(120)).as("the fault-injected run halts itself").isEqualTo(137);
        // B2: at full speed (a backlog produced unthrottled), killed while a generation write is in flight on its
        // writer thread and the stream thread is consuming the next batch.
        int fastFrom = records;
        cluster.produceUnthrottled(input, fastFrom, fastFrom + FAST_RECORDS, keys, latestVersion, produced);
        app = ChildJvm.start(
                FaultyIngestApp.class,
                List.of(config.toString()),
                Map.of("ROLLOUT_FAULT_HALT_DURING_WRITE", "4", "ROLLOUT_SEAL_MAX_ROWS", "1500"),
                log);
        assertThat(app.waitFor(120)).as("halted with a write in flight").isEqualTo(137);
        assertThat(Files.readString(log)).contains("halting with a generation write in flight");
        // C: SIGKILLs at random points while producers keep writing.
        Thread producer = new Thread(
                () -> cluster.produce(input, firstWave, records, keys, latestVersion, produced, 150), "producer");
        producer.start();
        Random random = new Random(42);
        for (int kill = 0; kill < 3; kill++) {
            app = ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of(), log);
            Thread.sleep(4_000 + random.nextInt(4_000));
            app.kill();
        }
        producer.join(180_000);
        assertThat(produced.get()).isEqualTo(records + FAST_RECORDS);
        // D: a clean run to the end.
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of(), log);
        try {
            cluster.awaitAllSealed(run, input, PARTITIONS, tableDir, events, 180);
        } finally {
            assertThat(app.stop()).isIn(0, 143);
        }

        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, meters)) {
            List<RolloutRow> rows = table.list(ListQuery.all(10_000));
            assertThat(rows).hasSize(keys);
            Map<String, Long> seen = new HashMap<>();
            for (RolloutRow row : rows) {
                assertThat(seen.put(row.recordId(), row.rollout().getPolicyVersion()))
                        .as("duplicate " + row.recordId())
                        .isNull();
            }
            assertThat(seen).isEqualTo(latestVersion);

            Map<String, List<GenerationSealed>> announced = cluster.readEvents(events);
            for (int p = 0; p < PARTITIONS; p++) {
                String shard = ShardId.of(input, p);
                List<SealedGeneration> sealed = table.generations().pending(shard);
                List<GenerationSealed> shardEvents = announced.getOrDefault(shard, List.of());
                // Exactly one event per sealed generation, and the generations tile [0, end) of the partition.
                assertThat(shardEvents)
                        .extracting(GenerationSealed::getGeneration)
                        .containsExactlyElementsOf(sealed.stream()
                                .map(SealedGeneration::generation)
                                .toList());
                long next = 0;
                for (SealedGeneration g : sealed) {
                    assertThat(g.firstOffset())
                            .as("shard %s generation %d starts where the previous ended", shard, g.generation())
                            .isEqualTo(next);
                    next = g.lastOffset() + 1;
                }
            }
            String appLog = Files.readString(log);
            assertThat(appLog).contains("adopting generation");
            assertThat(appLog).containsPattern("re-read [1-9][0-9]* unsealed records");
        }
    }

    @Test
    void recordsRetentionRemovedBeforeTheyWereSealedAreReportedLostNotSkippedSilently() throws Exception {
        String run = "ret-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        cluster.createRunTopics(run, input, 1);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Path config = cluster.instanceConfig(run, input, work, "ingest", Map.of());
        Map<String, Long> latest = new TreeMap<>();
        cluster.produce(input, 0, 200, 200, latest, new AtomicLong(), 0);
        Path log = work.resolve("ingest.log");
        ChildJvm app = ChildJvm.start(
                IngestApp.class,
                List.of(config.toString()),
                Map.of("ROLLOUT_SEAL_MAX_ROWS", "1000000", "ROLLOUT_SEAL_MAX_AGE_MS", "3600000"),
                log);
        cluster.awaitCommitted(run, input, 1, 120);
        app.kill();
        // Retention takes the first 120 records while they were processed but not sealed.
        try (var admin = cluster.kafka().admin()) {
            admin.deleteRecords(Map.of(
                            new org.apache.kafka.common.TopicPartition(input, 0),
                            org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(120)))
                    .all()
                    .get();
        }
        app = ChildJvm.start(IngestApp.class, List.of(config.toString()), Map.of(), log);
        try {
            cluster.awaitAllSealed(run, input, 1, tableDir, run + "-generations", 120);
        } finally {
            app.stop();
        }
        assertThat(Files.readString(log)).contains("records [0, 120) expired from the topic before they were sealed");
        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            assertThat(table.countRows()).isEqualTo(80);
            assertThat(table.generations().pending(ShardId.of(input, 0)).get(0).firstOffset())
                    .isEqualTo(0);
        }
    }
}
