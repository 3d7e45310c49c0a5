package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.testsupport.AppSettings;
import dev.rolloutingest.testsupport.BaseRows;
import dev.rolloutingest.testsupport.Rollouts;
import dev.rolloutingest.testsupport.Services;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The ingest app and the merge-worker in one process ({@code rollout-ingest pipeline}), through the real broker and
 * registry: the process is SIGKILLed twice while a producer writes and deletes, and at the end lance-core alone reads
 * every key once with its last value, no deleted key, nothing pending.
 */
class PipelineIT {
    @RegisterExtension
    static final Services SERVICES = Services.sharingRegistry("it-pipeline");

    private static final int KEYS = 200;

    private final Map<String, Long> expected = new TreeMap<>();
    private final AtomicBoolean producing = new AtomicBoolean(true);

    @Test
    void bothAppsInOneProcessLandEveryKeyOnceThroughKills() throws Exception {
        TestCluster cluster = SERVICES.cluster();
        String run = "pipeline-" + UUID.randomUUID().toString().substring(0, 6);
        Path dir = SERVICES.root().resolve(run);
        Path table = dir.resolve("table");
        cluster.createTopics(Map.of(
                run + "-in", 2,
                run + "-generations", 2,
                run + "-merges", 1,
                run + "-dlq", 1));
        AppSettings common = AppSettings.of(cluster)
                .with("rollout.table.uri", table.toString())
                .with("rollout.input.topic", run + "-in")
                .with("rollout.generations.topic", run + "-generations")
                .with("rollout.merges.topic", run + "-merges")
                .with("rollout.dlq.topic", run + "-dlq")
                .with("rollout.seal.max.rows", "50")
                .with("rollout.seal.max.age.ms", "1000")
                .with("rollout.seal.check.interval.ms", "100")
                .with("rollout.merge.after.generations", "2")
                .with("rollout.merge.max.pending.age.ms", "1500")
                .with("rollout.gc.interval.ms", "0")
                .with("rollout.compaction.interval.ms", "0");
        Path ingest = AppSettings.of(cluster)
                .with(common.map())
                .with("application.id", run + "-ingest")
                .state(dir.resolve("ingest"))
                .writeTo(dir.resolve("ingest.properties"));
        Path merge = AppSettings.of(cluster)
                .with(common.map())
                .with("application.id", run + "-merge")
                .state(dir.resolve("merge"))
                .writeTo(dir.resolve("merge.properties"));
        List<String> args = List.of(ingest.toString(), merge.toString());
        Path log = dir.resolve("pipeline.log");
        Rollouts rollouts = new Rollouts(cluster, new RolloutGenerator("unused", 64, 3));
        TableLocation location = TableLocation.local(table);
        AtomicReference<Exception> writeFailed = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try (KafkaProducer<String, Rollout> producer = rollouts.producer()) {
                for (int i = 0; producing.get(); i++) {
                    produce(producer, run + "-in", i % KEYS, i, i % 9 == 8);
                    Thread.sleep(5);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                writeFailed.set(e);
            }
        });
        ChildJvm pipeline = ChildJvm.start(PipelineApp.class, args, Map.of(), log);
        try {
            writer.start();
            try {
                long merged = 0;
                for (int kill = 0; kill < 2; kill++) {
                    // each kill once the process has merged more since the last: a kill of a process still starting
                    // would test nothing
                    merged = awaitMergedBeyond(location, merged, 120);
                    pipeline.kill(); // returns once the process is gone
                    pipeline = ChildJvm.start(PipelineApp.class, args, Map.of(), log);
                }
                awaitMergedBeyond(location, merged, 120);
            } finally {
                producing.set(false);
                writer.join(60_000);
            }
            assertThat(writeFailed.get()).as("the producer's sends").isNull();
            verify(location, run + "-in", 180);
        } finally {
            pipeline.close();
        }
    }

    /** Waits until the merged watermarks add up to more than {@code merged}; returns their sum. */
    private static long awaitMergedBeyond(TableLocation location, long merged, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline) {
            if (java.nio.file.Files.exists(Path.of(location.uri()))) {
                try (RolloutTable t = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                    long now = t.generations().watermarks().values().stream()
                            .mapToLong(Long::longValue)
                            .sum();
                    if (now > merged) {
                        return now;
                    }
                }
            }
            Thread.sleep(500);
        }
        throw new AssertionError("nothing merged beyond offset sum " + merged + " in " + seconds + " s");
    }

    private void produce(KafkaProducer<String, Rollout> producer, String topic, long key, int version, boolean delete)
            throws Exception {
        Rollout rollout = new RolloutGenerator("exp-pipeline", 64, 3).rollout(key, version);
        String id = rollout.getRecordId().toString();
        // a key always goes to one partition: production order is ingest order for it
        producer.send(new ProducerRecord<>(topic, (int) (key % 2), id, delete ? null : rollout))
                .get();
        synchronized (expected) {
            if (delete) {
                expected.remove(id);
            } else {
                expected.put(id, rollout.getPolicyVersion());
            }
        }
    }

    /** Until the base (read by lance-core alone) holds every produced key once with its last value, nothing pending. */
    private void verify(TableLocation location, String topic, int seconds) throws Exception {
        Map<String, Long> want;
        synchronized (expected) {
            want = new TreeMap<>(expected);
        }
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        Map<String, Long> seen = Map.of();
        int pending = -1;
        while (System.currentTimeMillis() < deadline) {
            seen = BaseRows.live(location, null);
            pending = 0;
            try (RolloutTable t = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                for (int p = 0; p < 2; p++) {
                    pending += t.generations().pending(ShardId.of(topic, p)).size();
                }
            }
            if (seen.equals(want) && pending == 0) {
                break;
            }
            Thread.sleep(1_000);
        }
        assertThat(pending).as("generations still pending").isZero();
        assertThat(seen)
                .as("the base as lance-core reads it: each key once, its last value, no deleted key")
                .isEqualTo(want);
        assertThat(want).as("the run produced").hasSizeGreaterThan(KEYS / 2);
    }
}
