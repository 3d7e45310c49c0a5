package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.ingest.FaultyIngestApp;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
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
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Many topics into many tables through the real broker and registry, exactly once under crashes: two input topics
 * read by a pattern (a third created while the apps run is picked up), records of three tables (routed by their
 * experiment) in every partition, deletes naming their table in a header. A seal of three tables is cut short after
 * its second table's generation (fault injection), then two ingest and two merge processes are SIGKILLed in turn while
 * a producer runs. At the end lance-core alone reads each table's base: every key of the table once with its last
 * value, no key of another table, nothing pending.
 */
class ManyTablesIT {
    @RegisterExtension
    static final Services SERVICES = Services.sharingRegistry("it-many-tables");

    private static final int TABLES = 3;
    private static final int KEYS = 240;
    /** The first key of the seal cut short, above every key the producer rewrites. */
    private static final long CUT_KEYS = 100_000;

    /** The producer's view: per table, each key's last version (a delete removes it). */
    private final Map<String, Map<String, Long>> expected = new TreeMap<>();

    private final AtomicBoolean producing = new AtomicBoolean(true);

    private static String experiment(long key) {
        return "exp-" + key % TABLES;
    }

    /** Key k always goes to the same topic and partition (production order = ingest order for a key). */
    private static String topicOf(String run, long key) {
        return run + "-" + (key % 2 == 0 ? "a" : "b");
    }

    private void produce(KafkaProducer<String, Rollout> producer, String topic, long key, int version, boolean delete)
            throws Exception {
        String table = experiment(key);
        Rollout rollout = new RolloutGenerator(table, 64, 3).rollout(key, version);
        String id = rollout.getRecordId().toString();
        ProducerRecord<String, Rollout> record =
                new ProducerRecord<>(topic, (int) (key / 2 % 2), id, delete ? null : rollout);
        if (delete) {
            record.headers().add(IngestConfig.TABLE_HEADER, table.getBytes(StandardCharsets.UTF_8));
        }
        producer.send(record).get();
        synchronized (expected) {
            Map<String, Long> rows = expected.computeIfAbsent(table, t -> new TreeMap<>());
            if (delete) {
                rows.remove(id);
            } else {
                rows.put(id, rollout.getPolicyVersion());
            }
        }
    }

    @Test
    void recordsOfThreeTablesInEveryPartitionLandOnceInTheirTableThroughKillsAndACutSeal() throws Exception {
        TestCluster cluster = SERVICES.cluster();
        String run = "many-" + UUID.randomUUID().toString().substring(0, 6);
        Path dir = SERVICES.root().resolve(run);
        Path root = dir.resolve("tables");
        cluster.createTopics(Map.of(
                run + "-a", 2,
                run + "-b", 2,
                run + "-generations", 2,
                run + "-merges", 1,
                run + "-dlq", 1));
        AppSettings common = AppSettings.of(cluster)
                .with("rollout.tables.root", root.toString())
                .with("rollout.input.topic.pattern", run + "-[abc]")
                .with("rollout.input.topic.refresh.ms", "2000")
                .with("rollout.table.route", "${experiment}")
                .with("rollout.generations.topic", run + "-generations")
                .with("rollout.merges.topic", run + "-merges")
                .with("rollout.dlq.topic", run + "-dlq")
                .with("rollout.seal.max.rows", "60")
                .with("rollout.seal.max.age.ms", "1000")
                .with("rollout.seal.check.interval.ms", "100")
                .with("rollout.merge.after.generations", "2")
                .with("rollout.merge.max.pending.age.ms", "1500")
                .with("rollout.gc.interval.ms", "0")
                .with("rollout.compaction.interval.ms", "0");
        Path ingest1 = AppSettings.of(cluster)
                .with(common.map())
                .with("application.id", run + "-ingest")
                .state(dir.resolve("ingest-1"))
                .writeTo(dir.resolve("ingest-1.properties"));
        Path ingest2 = AppSettings.of(cluster)
                .with(common.map())
                .with("application.id", run + "-ingest")
                .state(dir.resolve("ingest-2"))
                .writeTo(dir.resolve("ingest-2.properties"));
        Path merge1 = AppSettings.of(cluster)
                .with(common.map())
                .with("application.id", run + "-merge")
                .state(dir.resolve("merge-1"))
                .writeTo(dir.resolve("merge-1.properties"));
        Path merge2 = AppSettings.of(cluster)
                .with(common.map())
                .with("application.id", run + "-merge")
                .state(dir.resolve("merge-2"))
                .writeTo(dir.resolve("merge-2.properties"));
        Rollouts rollouts = new Rollouts(cluster, new RolloutGenerator("unused", 64, 3));

        try (KafkaProducer<String, Rollout> producer = rollouts.producer()) {
            // 1. A seal of three tables cut short: the JVM halts right after the second table's generation.
            // keys no later record rewrites: a row of this seal lost would stay missing
            for (long key = 0; key < 60; key++) {
                produce(producer, run + "-a", CUT_KEYS + key * 2, 0, false); // topic a, both partitions
            }
            Path cutLog = dir.resolve("ingest-cut.log");
            ChildJvm cut = ChildJvm.start(
                    FaultyIngestApp.class,
                    List.of(ingest1.toString()),
                    Map.of("ROLLOUT_FAULT_HALT_AFTER_TABLE_WRITES", "2"),
                    cutLog);
            assertThat(cut.waitFor(120))
                    .as("the fault-injected run halts itself")
                    .isEqualTo(137);
            assertThat(Files.readString(cutLog)).contains("halting after a table's generation of a seal");

            // 2. Two ingest and two merge processes, each SIGKILLed in turn while a producer runs.
            List<Path> configs = List.of(ingest1, ingest2, merge1, merge2);
            List<Class<?>> mains = List.of(IngestApp.class, IngestApp.class, MergeApp.class, MergeApp.class);
            List<ChildJvm> apps = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                apps.add(ChildJvm.start(mains.get(i), List.of(configs.get(i).toString()), Map.of(), log(dir, i)));
            }
            Thread writer = new Thread(() -> {
                try (KafkaProducer<String, Rollout> p = rollouts.producer()) {
                    for (int i = 0; producing.get(); i++) {
                        long key = i % KEYS;
                        produce(p, topicOf(run, key), key, i, i % 11 == 10);
                        Thread.sleep(5);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            writer.start();
            try {
                for (int round = 0; round < 2; round++) {
                    for (int i = 0; i < 4; i++) {
                        Thread.sleep(4_000);
                        apps.get(i).kill(); // returns once the process is gone
                        apps.set(
                                i,
                                ChildJvm.start(
                                        mains.get(i), List.of(configs.get(i).toString()), Map.of(), log(dir, i)));
                    }
                }
                // 3. A topic created while the apps run: the pattern picks it up without a restart.
                cluster.createTopics(Map.of(run + "-c", 2));
                for (long key = KEYS; key < KEYS + 30; key++) {
                    produce(producer, run + "-c", key, 1, false);
                }
                Thread.sleep(3_000);
            } finally {
                producing.set(false);
                writer.join(60_000);
            }
            try {
                verifyEveryTable(root, run, 180);
            } finally {
                apps.forEach(ChildJvm::close);
            }
        }
    }

    private static Path log(Path dir, int app) {
        return dir.resolve("app-" + app + ".log");
    }

    /** Until every table's base (read by lance-core alone) holds the produced keys of that table once, nothing pending. */
    private void verifyEveryTable(Path root, String run, int seconds) throws Exception {
        Map<String, Map<String, Long>> want;
        synchronized (expected) {
            want = new TreeMap<>();
            expected.forEach((t, rows) -> want.put(t, new TreeMap<>(rows)));
        }
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        Map<String, Map<String, Long>> seen = new TreeMap<>();
        int pending = -1;
        while (System.currentTimeMillis() < deadline) {
            seen.clear();
            pending = 0;
            for (String table : want.keySet()) {
                TableLocation location = TableLocation.local(root.resolve(table));
                seen.put(table, BaseRows.live(location, null));
                try (RolloutTable t = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                    for (String topic : List.of(run + "-a", run + "-b", run + "-c")) {
                        for (int p = 0; p < 2; p++) {
                            pending += t.generations()
                                    .pending(ShardId.of(topic, p))
                                    .size();
                        }
                    }
                }
            }
            if (seen.equals(want) && pending == 0) {
                break;
            }
            Thread.sleep(1_000);
        }
        assertThat(pending).as("generations still pending").isZero();
        for (String table : want.keySet()) {
            assertThat(seen.get(table))
                    .as("table %s as lance-core reads its base: each of its keys once, its last value", table)
                    .isEqualTo(want.get(table));
        }
        Map<String, Long> all = new HashMap<>();
        want.values().forEach(all::putAll);
        assertThat(all).as("the run produced into every table").hasSizeGreaterThan(KEYS / 2);
    }
}
