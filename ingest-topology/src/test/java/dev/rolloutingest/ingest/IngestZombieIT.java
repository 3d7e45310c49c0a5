package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Rebalances and a zombie: two instances share the partitions; one is frozen (SIGSTOP) past its session
 * timeout so the other takes its partitions over, then thawed (SIGCONT) while it still holds batches it
 * believes it owns. Whatever the zombie writes, the announced generations still tile every partition and
 * readers see each record once with its latest value.
 */
class IngestZombieIT {
    private static final Path ROOT = Path.of("target", "it-zombie").toAbsolutePath();
    private static final int PARTITIONS = 4;
    private static IngestCluster cluster;

    @BeforeAll
    static void services() {
        cluster = new IngestCluster(ROOT);
    }

    @AfterAll
    static void stopServices() {
        cluster.close();
    }

    @Test
    void aFrozenOwnerThawedAfterARebalanceCannotMakeReadsOrEventsWrong() throws Exception {
        String run = "zb-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String events = run + "-generations";
        cluster.kafka.createTopics(List.of(
                new NewTopic(input, PARTITIONS, (short) 1),
                new NewTopic(events, 1, (short) 1),
                new NewTopic(run + "-dlq", 1, (short) 1)));
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Map<String, String> common = Map.of(
                "rollout.input.topic",
                input,
                "rollout.generations.topic",
                events,
                "rollout.dlq.topic",
                run + "-dlq",
                "rollout.table.uri",
                tableDir.toString(),
                "application.id",
                run,
                "streams.consumer.session.timeout.ms",
                "6000",
                "streams.consumer.heartbeat.interval.ms",
                "1000");
        Path configA = cluster.writeConfig(
                work.resolve("a"),
                with(common, "rollout.state.dir", work.resolve("state-a").toString()));
        Path configB = cluster.writeConfig(
                work.resolve("b"),
                with(common, "rollout.state.dir", work.resolve("state-b").toString()));

        int records = 2_400;
        int keys = 700;
        Map<String, Long> latest = new TreeMap<>();
        AtomicLong produced = new AtomicLong();
        Thread producer = new Thread(() -> cluster.produce(input, 0, records, keys, latest, produced, 120), "producer");
        producer.start();
        try (ChildJvm a =
                        ChildJvm.start(IngestApp.class, List.of(configA.toString()), Map.of(), work.resolve("a.log"));
                ChildJvm b =
                        ChildJvm.start(IngestApp.class, List.of(configB.toString()), Map.of(), work.resolve("b.log"))) {
            Thread.sleep(8_000);
            signal("STOP", a.pid());
            Thread.sleep(14_000); // past the session timeout: b owns every partition now
            signal("CONT", a.pid());
            producer.join(180_000);
            assertThat(produced.get()).isEqualTo(records);
            cluster.awaitAllSealed(run, input, PARTITIONS, tableDir, 180);
            a.stop();
            b.stop();
        }
        cluster.verify(tableDir, input, PARTITIONS, events, latest);
        String logs = Files.readString(work.resolve("a.log")) + Files.readString(work.resolve("b.log"));
        assertThat(logs).contains("sealed generation");
    }

    private static Map<String, String> with(Map<String, String> base, String key, String value) {
        Map<String, String> copy = new java.util.HashMap<>(base);
        copy.put(key, value);
        return copy;
    }

    private static void signal(String signal, long pid) throws Exception {
        assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                        .inheritIO()
                        .start()
                        .waitFor())
                .isZero();
    }
}
