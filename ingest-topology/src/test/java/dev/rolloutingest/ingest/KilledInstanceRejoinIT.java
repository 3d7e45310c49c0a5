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
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An instance killed with SIGKILL and started again takes its partitions back as the same static member without
 * making the group rebalance: the other instance stays RUNNING throughout. (Its stores, left without checkpoints by
 * the kill, are wiped before Streams starts; found so after the assignment, Streams would rebalance the whole group,
 * which waits for every member's next heartbeat.) Every record still lands once, and the changelog restored from closes
 * its segments hourly, so compaction keeps what a restart reads back short.
 */
class KilledInstanceRejoinIT {
    private static final Path ROOT = Path.of("target", "it-killed-rejoin").toAbsolutePath();
    private static final int PARTITIONS = 2;
    /** How a restart shows in an app's log: once per start of the JVM. */
    private static final String STARTED = "ms after the JVM started";

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-killed-rejoin");

    @Test
    void aKilledInstanceRejoinsWithoutARebalanceOfTheOthers() throws Exception {
        String run = "kr-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String events = run + "-generations";
        cluster.createRunTopics(run, input, PARTITIONS);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        // the killed member must be back well within its session, however slow this machine is right now
        Map<String, String> session = Map.of("rollout.session.timeout.ms", "60000");
        Path configA = cluster.instanceConfig(run, input, work, "a", session);
        Path configB = cluster.instanceConfig(run, input, work, "b", session);
        Path logA = work.resolve("a.log");
        Path logB = work.resolve("b.log");

        int records = 2_000;
        Map<String, Long> latest = new TreeMap<>();
        AtomicLong produced = new AtomicLong();
        Thread producer = new Thread(() -> cluster.produce(input, 0, records, 600, latest, produced, 150), "producer");
        producer.start();
        ChildJvm a = ChildJvm.start(IngestApp.class, List.of(configA.toString()), Map.of(), logA);
        try (ChildJvm b = ChildJvm.start(IngestApp.class, List.of(configB.toString()), Map.of(), logB)) {
            cluster.awaitGroup(run, input, PARTITIONS, 2, 120);
            IngestCluster.awaitLog(logA, 0, "sealed generation", 120);
            a.kill();
            long bFrom = Files.size(logB);
            long aFrom = Files.size(logA);
            a = ChildJvm.start(IngestApp.class, List.of(configA.toString()), Map.of(), logA);
            IngestCluster.awaitLog(logA, aFrom, STARTED, 120);
            producer.join(180_000);
            assertThat(produced.get()).isEqualTo(records);
            cluster.awaitAllSealed(run, input, PARTITIONS, tableDir, events, 180);

            assertThat(IngestCluster.logAfter(logB, bFrom))
                    .as("the other instance, from the kill on")
                    .doesNotContain("-> REBALANCING");
            assertThat(Files.readString(logA).substring(0, (int) aFrom))
                    .as("the first start, with no state yet")
                    .doesNotContain("did not close cleanly");
            String restarted = IngestCluster.logAfter(logA, aFrom);
            assertThat(restarted)
                    .as("the restarted instance's start")
                    .contains("did not close cleanly")
                    .doesNotContain("corrupted");
            // what the restart restored from: a changelog whose segments close (and compact) hourly, not weekly
            try (Admin admin = cluster.kafka().admin()) {
                ConfigResource changelog = new ConfigResource(
                        ConfigResource.Type.TOPIC, run + "-" + IngestTopology.PROGRESS_STORE + "-changelog");
                assertThat(admin.describeConfigs(List.of(changelog))
                                .all()
                                .get()
                                .get(changelog)
                                .get(TopicConfig.SEGMENT_MS_CONFIG)
                                .value())
                        .isEqualTo("3600000");
            }
            a.stop();
            b.stop();
        } finally {
            a.close();
        }
        cluster.verify(tableDir, input, PARTITIONS, events, latest);
    }
}
