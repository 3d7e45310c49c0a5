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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Rebalances and a zombie: two instances share the partitions; one is frozen (SIGSTOP) past its session
 * timeout so the other takes its partitions over, then thawed (SIGCONT) while it still holds batches it
 * believes it owns. Whatever the zombie writes, the announced generations still tile every partition and
 * readers see each record once with its latest value.
 */
class IngestZombieIT {
    private static final Path ROOT = Path.of("target", "it-zombie").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-zombie");

    private static final int PARTITIONS = 4;

    @Test
    void aFrozenOwnerThawedAfterARebalanceCannotMakeReadsOrEventsWrong() throws Exception {
        String run = "zb-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String events = run + "-generations";
        cluster.createRunTopics(run, input, PARTITIONS);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Map<String, String> sessions =
                Map.of("streams.consumer.session.timeout.ms", "6000", "streams.consumer.heartbeat.interval.ms", "1000");
        Path configA = cluster.instanceConfig(run, input, work, "a", sessions);
        Path configB = cluster.instanceConfig(run, input, work, "b", sessions);

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
            // Both own partitions, and a has sealed some: it holds batches of its own when it freezes.
            cluster.awaitGroup(run, input, PARTITIONS, 2, 120);
            IngestCluster.awaitLog(work.resolve("a.log"), 0, "sealed generation", 120);
            signal("STOP", a.pid());
            // Past the session timeout: b alone owns every partition.
            long frozen = System.nanoTime();
            cluster.awaitGroup(run, input, PARTITIONS, 1, 120);
            System.out.printf(
                    "zombie: b owned every partition %.1f s after a froze (session timeout 6 s)%n",
                    (System.nanoTime() - frozen) / 1e9);
            signal("CONT", a.pid());
            producer.join(180_000);
            assertThat(produced.get()).isEqualTo(records);
            cluster.awaitAllSealed(run, input, PARTITIONS, tableDir, events, 180);
            a.stop();
            b.stop();
        }
        cluster.verify(tableDir, input, PARTITIONS, events, latest);
        String logs = Files.readString(work.resolve("a.log")) + Files.readString(work.resolve("b.log"));
        assertThat(logs).contains("sealed generation");
    }

    private static void signal(String signal, long pid) throws Exception {
        assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
                        .inheritIO()
                        .start()
                        .waitFor())
                .isZero();
    }
}
