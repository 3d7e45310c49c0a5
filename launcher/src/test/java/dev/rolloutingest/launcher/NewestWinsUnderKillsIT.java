package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.launcher.FaultRig.App;
import dev.rolloutingest.launcher.FaultRig.Run;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.BaseRows;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The edges of exactly-once under kills of every process: puts and deletes of one id across partitions, snapshots
 * taken while processes die, old deletes dropped as the run goes; newest wins in the reads, the base and every snapshot.
 */
class NewestWinsUnderKillsIT {
    @RegisterExtension
    static final FaultRig rig = new FaultRig("it-faults-edges");

    /** How long the edges test waits while nothing moves (no id became readable, no generation merged). */
    private static final long STALL_MS = 180_000;

    /** One produced operation on an id: a put of a version, or a delete; where the broker put it. */
    private record Op(boolean delete, int version, int partition, long offset) {}

    /**
     * The edges of exactly-once, all at once, through the real broker and separate processes: keyless and keyed puts
     * and keyed deletes of the same ids spread over the 4 partitions, 2 ingest and 2 merge-workers SIGKILLed in turn,
     * snapshots created over HTTP every few seconds, old deletes dropped as the run goes (a 5 s retention). An id's
     * next operation is produced once its last one is readable, so production order is ingest order and the expected
     * state of an id is its last operation (newest wins across partitions by ingest time). At the end: every id reads
     * as its last operation, the base holds no key twice (lance-core alone), and every snapshot holds exactly each
     * id's last operation below its offsets.
     */
    @Test
    void putsAndDeletesOfOneIdAcrossPartitionsWithSnapshotsAndKillsOfEveryProcessEndNewestWins() throws Exception {
        Run run = rig.run("edges", null, Map.of());
        int[] mergePorts = {dev.rolloutingest.embedded.FreePorts.next(), dev.rolloutingest.embedded.FreePorts.next()};
        Map<String, String> deletesDropped = Map.of(
                "rollout.delete.retention.ms", "5000",
                "rollout.gc.interval.ms", "3000");
        List<App> apps = new ArrayList<>();
        for (String instance : List.of("a", "b")) {
            apps.add(new App(
                    IngestApp.class,
                    run.config("ingest", instance, Map.of()),
                    run.dir().resolve("ingest-" + instance + ".log")));
            Map<String, String> merge = new HashMap<>(deletesDropped);
            merge.put("http.port", Integer.toString(mergePorts[instance.equals("a") ? 0 : 1]));
            merge.put("rollout.snapshot.topic", run.input());
            apps.add(new App(
                    MergeApp.class,
                    run.config("merge", instance, merge),
                    run.dir().resolve("merge-" + instance + ".log")));
        }
        int ids = 300;
        Map<String, List<Op>> history = new TreeMap<>();
        Map<String, Boolean> awaiting = new HashMap<>();
        for (int i = 0; i < ids; i++) {
            history.put("edge-" + i, new ArrayList<>());
            awaiting.put("edge-" + i, false);
        }
        List<Map<String, Long>> snapshotOffsets = new ArrayList<>();
        List<String> snapshotNames = new ArrayList<>();
        AtomicBoolean running = new AtomicBoolean(true);
        // Kills and snapshots belong to the production phase; the drain after it waits for the outcome alone.
        AtomicBoolean chaos = new AtomicBoolean(true);
        int[] kills = {0};
        int[] snapshotFailures = {0};
        java.util.Random random = new java.util.Random(7);
        RolloutGenerator generator = new RolloutGenerator("edges", 64, 9);
        apps.forEach(App::start);
        Thread killer = new Thread(
                () -> {
                    try {
                        for (int n = 0; chaos.get(); n++) {
                            Thread.sleep(7_000);
                            if (!chaos.get()) {
                                return;
                            }
                            App victim = apps.get(n % apps.size()); // ingest a, merge a, ingest b, merge b
                            victim.jvm.kill();
                            victim.start();
                            kills[0]++;
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "edge-killer");
        Thread snapshotter = new Thread(
                () -> {
                    HttpClient http = HttpClient.newHttpClient();
                    com.fasterxml.jackson.databind.ObjectMapper json =
                            new com.fasterxml.jackson.databind.ObjectMapper();
                    try {
                        for (int n = 0; chaos.get(); n++) {
                            Thread.sleep(3_000);
                            String name = "edge-snap-" + n;
                            try {
                                HttpResponse<String> created = http.send(
                                        HttpRequest.newBuilder(URI.create(
                                                        "http://127.0.0.1:" + mergePorts[n % 2] + "/snapshots/" + name))
                                                .timeout(Duration.ofSeconds(120))
                                                .POST(HttpRequest.BodyPublishers.noBody())
                                                .build(),
                                        HttpResponse.BodyHandlers.ofString());
                                if (created.statusCode() != 201) {
                                    snapshotFailures[0]++;
                                    continue;
                                }
                                Map<String, Long> offsets = new TreeMap<>();
                                json.readTree(created.body())
                                        .get("offsets")
                                        .fields()
                                        .forEachRemaining(e -> offsets.put(
                                                e.getKey(), e.getValue().asLong()));
                                synchronized (snapshotNames) {
                                    snapshotNames.add(name);
                                    snapshotOffsets.add(offsets);
                                }
                            } catch (IOException e) {
                                snapshotFailures[0]++; // the merge-worker was killed under the request
                            }
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "edge-snapshots");
        try (KafkaProducer<String, Rollout> producer = rig.rolloutProducer();
                RolloutTable reader = RolloutTable.createOrOpen(
                        run.location(),
                        TableSettings.DEFAULTS.with(TableSettings.READ_REFRESH_MS, 0),
                        new SimpleMeterRegistry())) {
            killer.start();
            snapshotter.start();
            int version = 0;
            // Production lasts 70 s and until the kills and snapshots the assertions ask for happened (on a slow
            // machine they come slower), at most 10 minutes; then the drain waits as long as ids keep becoming
            // readable, failing only after STALL_MS without any.
            long started = System.currentTimeMillis();
            long lastProgress = started;
            int settledBefore = -1;
            Map<String, Long> lastRead = Map.of();
            while (System.currentTimeMillis() - lastProgress < STALL_MS) {
                Map<String, Long> readable;
                try {
                    readable = new HashMap<>();
                    for (RolloutRow row : reader.list(ListQuery.all(100_000))) {
                        readable.put(row.recordId(), row.rollout().getPolicyVersion());
                    }
                } catch (RuntimeException e) {
                    Thread.sleep(300); // a store or a generation being written: read again
                    continue;
                }
                lastRead = readable;
                long now = System.currentTimeMillis();
                boolean producing;
                synchronized (snapshotNames) {
                    producing = now - started < 600_000
                            && (now - started < 70_000 || kills[0] < 8 || snapshotNames.size() < 5);
                }
                if (!producing) {
                    chaos.set(false);
                }
                boolean allVisible = true;
                int settled = 0;
                for (Map.Entry<String, List<Op>> entry : history.entrySet()) {
                    String id = entry.getKey();
                    List<Op> ops = entry.getValue();
                    if (awaiting.get(id)) {
                        Op last = ops.get(ops.size() - 1);
                        boolean visible = last.delete()
                                ? !readable.containsKey(id)
                                : Long.valueOf(last.version()).equals(readable.get(id));
                        if (!visible) {
                            allVisible = false;
                            continue;
                        }
                        awaiting.put(id, false);
                    }
                    settled++;
                    if (!producing) {
                        continue;
                    }
                    // a delete only of a readable put (so its taking effect can be seen), else a put
                    boolean delete = !ops.isEmpty() && !ops.get(ops.size() - 1).delete() && random.nextInt(3) == 0;
                    boolean keyless = !delete && random.nextBoolean();
                    Integer partition = keyless ? null : random.nextInt(4);
                    Rollout rollout = generator.rollout(Math.abs(id.hashCode()), ++version);
                    rollout.setRecordId(id);
                    rollout.setPolicyVersion((long) version);
                    org.apache.kafka.clients.producer.RecordMetadata sent = producer.send(new ProducerRecord<>(
                                    run.input(), partition, keyless ? null : id, delete ? null : rollout))
                            .get();
                    ops.add(new Op(delete, version, sent.partition(), sent.offset()));
                    awaiting.put(id, true);
                }
                if (!producing && allVisible) {
                    break;
                }
                if (producing || settled > settledBefore) {
                    lastProgress = now;
                }
                settledBefore = settled;
                Thread.sleep(300);
            }
            chaos.set(false);
            running.set(false);
            killer.join(60_000);
            snapshotter.join(180_000);
            Map<String, Long> lastSeen = lastRead;
            assertThat(awaiting.entrySet().stream()
                            .filter(Map.Entry::getValue)
                            .map(e -> e.getKey() + ": ops " + history.get(e.getKey()) + ", last read version "
                                    + lastSeen.get(e.getKey()))
                            .toList())
                    .as("every id's last operation readable")
                    .isEmpty();

            // every process alive, every generation merged
            for (App app : apps) {
                if (!app.jvm.isAlive()) {
                    app.start();
                }
            }
            int pending = -1;
            int fewest = Integer.MAX_VALUE;
            long merging = System.currentTimeMillis();
            while (pending != 0 && System.currentTimeMillis() - merging < STALL_MS) {
                pending = 0;
                for (int p = 0; p < 4; p++) {
                    pending += reader.generations()
                            .pending(ShardId.of(run.input(), p))
                            .size();
                }
                if (pending < fewest) {
                    fewest = pending; // merging goes on: wait on
                    merging = System.currentTimeMillis();
                }
                Thread.sleep(1_000);
            }
            assertThat(pending).as("generations left pending").isZero();

            Map<String, Long> expected = new TreeMap<>();
            long deletes = 0;
            long opsTotal = 0;
            for (Map.Entry<String, List<Op>> entry : history.entrySet()) {
                List<Op> ops = entry.getValue();
                opsTotal += ops.size();
                deletes += ops.stream().filter(Op::delete).count();
                Op last = ops.get(ops.size() - 1);
                if (!last.delete()) {
                    expected.put(entry.getKey(), (long) last.version());
                }
            }
            Map<String, Long> read = new TreeMap<>();
            reader.list(ListQuery.all(100_000))
                    .forEach(
                            row -> read.put(row.recordId(), (long) row.rollout().getPolicyVersion()));
            assertThat(read).as("every id as its last operation left it").isEqualTo(expected);
            assertThat(liveBase(run.location(), null))
                    .as("the base by lance-core alone")
                    .isEqualTo(expected);

            List<String> names;
            List<Map<String, Long>> cuts;
            synchronized (snapshotNames) {
                names = new ArrayList<>(snapshotNames);
                cuts = new ArrayList<>(snapshotOffsets);
            }
            for (int n = 0; n < names.size(); n++) {
                Map<String, Long> cut = cuts.get(n);
                Map<String, Long> below = new TreeMap<>();
                for (Map.Entry<String, List<Op>> entry : history.entrySet()) {
                    Op lastBelow = null;
                    for (Op op : entry.getValue()) {
                        if (op.offset() < cut.getOrDefault(run.input() + ":" + op.partition(), 0L)) {
                            lastBelow = op;
                        }
                    }
                    if (lastBelow != null && !lastBelow.delete()) {
                        below.put(entry.getKey(), (long) lastBelow.version());
                    }
                }
                assertThat(liveBase(run.location(), names.get(n)))
                        .as("snapshot %s (offsets %s) holds exactly what lies below its offsets", names.get(n), cut)
                        .isEqualTo(below);
            }
            assertThat(names).as("snapshots created").hasSizeGreaterThanOrEqualTo(5);
            assertThat(kills[0]).as("kills").isGreaterThanOrEqualTo(8);
            System.out.printf(
                    "recovery: edges: %d ids, %d operations (%d deletes), %d snapshots checked (%d requests failed"
                            + " under kills), %d SIGKILLs of 2 ingest + 2 merge processes: every id newest-wins, no key"
                            + " twice, every snapshot exact%n",
                    ids, opsTotal, deletes, names.size(), snapshotFailures[0], kills[0]);
        } finally {
            chaos.set(false);
            running.set(false);
            killer.interrupt();
            snapshotter.interrupt();
            apps.forEach(App::close);
        }
    }

    /** record_id -> policy_version of the base's live rows at a tag (null: the latest), by lance-core alone. */
    private static Map<String, Long> liveBase(TableLocation location, String tag) {
        return BaseRows.live(location, tag);
    }
}
