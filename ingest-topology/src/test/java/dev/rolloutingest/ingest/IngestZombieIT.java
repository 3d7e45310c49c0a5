package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.GroupState;
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
        cluster.kafka()
                .createTopics(List.of(
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
            // Both own partitions, and a has sealed some: it holds batches of its own when it freezes.
            awaitGroup(run, input, 2, 120);
            awaitLog(work.resolve("a.log"), "sealed generation", 120);
            signal("STOP", a.pid());
            // Past the session timeout: b alone owns every partition.
            long frozen = System.nanoTime();
            awaitGroup(run, input, 1, 120);
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

    /**
     * Until the group is stable with the stream threads of {@code instances} instances, each instance owning input
     * partitions, all of them together (within {@code seconds}).
     */
    private static void awaitGroup(String group, String input, int instances, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        String last = "not described yet";
        try (Admin admin = cluster.kafka().admin()) {
            while (System.currentTimeMillis() < deadline) {
                ConsumerGroupDescription description;
                try {
                    description = admin.describeConsumerGroups(List.of(group))
                            .all()
                            .get()
                            .get(group);
                } catch (ExecutionException e) { // the group does not exist yet
                    last = e.getCause().toString();
                    Thread.sleep(200);
                    continue;
                }
                last = description.toString();
                // a member is one stream thread: its static id is the instance's with the thread's index after it
                Map<String, Set<Integer>> ownedByInstance = new TreeMap<>();
                for (MemberDescription member : description.members()) {
                    String instance = member.groupInstanceId()
                            .map(id -> id.substring(0, id.lastIndexOf('-')))
                            .orElse(member.consumerId());
                    Set<Integer> own = ownedByInstance.computeIfAbsent(instance, i -> new TreeSet<>());
                    member.assignment().topicPartitions().stream()
                            .filter(tp -> tp.topic().equals(input))
                            .forEach(tp -> own.add(tp.partition()));
                }
                Set<Integer> owned = new TreeSet<>();
                ownedByInstance.values().forEach(owned::addAll);
                if (description.groupState() == GroupState.STABLE
                        && ownedByInstance.size() == instances
                        && ownedByInstance.values().stream().noneMatch(Set::isEmpty)
                        && owned.size() == PARTITIONS) {
                    return;
                }
                Thread.sleep(200);
            }
        }
        throw new AssertionError(
                "group " + group + " not stable with " + instances + " instances within " + seconds + " s: " + last);
    }

    /** Until the log holds {@code text} (within {@code seconds}). */
    private static void awaitLog(Path log, String text, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (!(Files.exists(log) && Files.readString(log).contains(text))) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("no '" + text + "' in " + log + " within " + seconds + " s");
            }
            Thread.sleep(200);
        }
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
