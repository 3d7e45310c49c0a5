package dev.rolloutingest.merge;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.schemas.GenerationsMerged;
import dev.rolloutingest.schemas.MergeTrigger;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.BaseRows;
import dev.rolloutingest.testsupport.Rollouts;
import dev.rolloutingest.testsupport.Services;
import dev.rolloutingest.testsupport.Topics;
import java.io.IOException;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The merge-worker on a real broker and registry, fed by the real ingest app: it is halted right after a
 * Lance merge commit (before its offsets and event commit) and restarted, a shard is poisoned during the
 * run, and the cooldown list, the warn, the counter and the healthy shards' backlog are read from outside.
 */
class MergeWorkerIT {
    private static final Path ROOT = Path.of("target", "it-merge").toAbsolutePath();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static EmbeddedKafka kafka;
    private static ApicurioRegistry registry;

    @RegisterExtension
    static final Services SERVICES = Services.under("it-merge");

    @BeforeAll
    static void services() {
        kafka = SERVICES.cluster().kafka();
        registry = SERVICES.cluster().registry();
    }

    @Test
    void aPoisonedShardCoolsDownWhileHealthyShardsMergeAndAHaltAfterCommitMergesNothingTwice() throws Exception {
        Run run = Run.create("mw");
        String input = run.input();
        String merges = run.merges();
        Path work = run.work();
        Path tableDir = run.tableDir();
        Map<String, String> ingestProps = run.ingestProps();
        int adminPort = FreePorts.next();
        Path mergeConfig = run.mergeConfig(Map.of(
                "rollout.merge.after.generations", "3",
                "rollout.merge.max.generations", "4",
                "rollout.merge.max.pending.age.ms", "1500",
                "rollout.compaction.interval.ms", "3000",
                "rollout.gc.interval.ms", "2000",
                "rollout.gc.grace.ms", "1000",
                "streams.commit.interval.ms", "200",
                "http.port", Integer.toString(adminPort)));
        Path log = work.resolve("merge.log");
        HttpClient http = HttpClient.newHttpClient();
        String admin = "http://127.0.0.1:" + adminPort;
        String poisoned = ShardId.of(input, 3);
        SealedGeneration victim;

        try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start()) {
            produce(input, 0, 400);
            // 1. Halted right after its second committed Lance merge: offsets and event not committed.
            ChildJvm worker = ChildJvm.start(
                    FaultyMergeApp.class,
                    List.of(mergeConfig.toString()),
                    Map.of("ROLLOUT_FAULT_HALT_AFTER_MERGES", "2"),
                    log);
            assertThat(worker.waitFor(180)).isEqualTo(137);

            // 2. Poison one shard: its oldest pending generation loses its files (no worker runs meanwhile).
            produce(input, 400, 500);
            victim = awaitPendingGeneration(ingest, poisoned);
            FileTrees.deleteRecursively(Path.of(ingest.table().location().resolve(victim.datasetPath())));

            worker = ChildJvm.start(MergeApp.class, List.of(mergeConfig.toString()), Map.of(), log);
            try {
                produce(input, 500, 800);
                awaitTrue(120, () -> {
                    // Below the threshold a failure is listed but not active; wait for the cooldown itself.
                    JsonNode cooldowns = get(http, admin + "/cooldowns");
                    return cooldowns != null
                            && cooldowns.size() > 0
                            && cooldowns.get(0).get("active").asBoolean();
                });
                JsonNode cooldown = get(http, admin + "/cooldowns").get(0);
                assertThat(cooldown.get("kind").asText()).isEqualTo("merge");
                assertThat(cooldown.get("target").asText()).isEqualTo(poisoned);
                assertThat(cooldown.get("failures").asInt()).isGreaterThanOrEqualTo(3);
                assertThat(cooldown.get("active").asBoolean()).isTrue();
                assertThat(cooldown.get("until").asText()).isNotBlank();
                assertThat(cooldown.get("last_error").asText()).contains("generation " + victim.generation());
                String metrics = http.send(
                                HttpRequest.newBuilder(URI.create(admin + "/metrics"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())
                        .body();
                assertThat(metrics).containsPattern("merge_cooldowns_total\\{[^}]*\\} [1-9]");
                assertThat(metrics).contains("rollout_merge_backlog_generations");
                assertThat(metrics).contains("kafka_consumer_fetch_manager_records_lag");

                // Healthy shards drain to nothing pending while the poisoned one stays.
                awaitTrue(120, () -> {
                    for (int p = 0; p < 3; p++) {
                        if (!ingest.table()
                                .generations()
                                .pending(ShardId.of(input, p))
                                .isEmpty()) {
                            return false;
                        }
                    }
                    return true;
                });
                assertThat(ingest.table().generations().pending(poisoned)).isNotEmpty();
                JsonNode pending = get(http, admin + "/pending");
                assertThat(pending.get("shards").toString()).contains(poisoned);

                // A manual merge is never gated by the cooldown: it runs, and fails again.
                HttpResponse<String> manual = http.send(
                        HttpRequest.newBuilder(URI.create(admin + "/merge/" + poisoned))
                                .POST(HttpRequest.BodyPublishers.noBody())
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(manual.statusCode()).isEqualTo(500);
                assertThat(manual.body()).contains("generation " + victim.generation());
                int before = cooldown.get("failures").asInt();
                awaitTrue(
                        120,
                        () -> get(http, admin + "/cooldowns")
                                        .get(0)
                                        .get("failures")
                                        .asInt()
                                > before);
                HttpResponse<String> bad = http.send(
                        HttpRequest.newBuilder(URI.create(admin + "/merge/not-a-shard"))
                                .POST(HttpRequest.BodyPublishers.noBody())
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(bad.statusCode()).isEqualTo(400);
            } finally {
                worker.stop();
            }
        }
        String workerLog = Files.readString(log);
        assertThat(workerLog).contains("failed 3 times in a row").contains(poisoned);

        // Across every committed GenerationsMerged event, each generation of each shard appears once.
        List<GenerationsMerged> events = readMerges(merges);
        Set<String> seen = new HashSet<>();
        for (GenerationsMerged event : events) {
            for (long g : event.getMergedGenerations()) {
                assertThat(seen.add(event.getShardId() + "/" + g))
                        .as("merged twice: %s/%d", event.getShardId(), g)
                        .isTrue();
            }
        }
        assertThat(events).extracting(GenerationsMerged::getTrigger).contains(MergeTrigger.RECONCILE);
        // Nothing of the poisoned shard was merged at or past the generation whose files are gone.
        assertThat(events)
                .filteredOn(e -> e.getShardId().equals(poisoned))
                .allSatisfy(e -> assertThat(e.getNewWatermark()).isLessThan(victim.generation()));
    }

    /**
     * A merge round is two Lance commits when it has new keys: the append, then the merge-insert with the marks.
     * The worker is killed between them, then right after the marks, then runs on: reads never see a key twice,
     * and lance-core's own reader finds every key once in the base, with its latest value.
     */
    @Test
    void aKillBetweenARoundsRowsAndItsMarksAndRightAfterThemLeavesEveryKeyOnceInTheBase() throws Exception {
        Run run = Run.create("mwk");
        String input = run.input();
        int partitions = Run.PARTITIONS;
        Path work = run.work();
        Path tableDir = run.tableDir();
        Map<String, String> ingestProps = run.ingestProps();
        Path mergeConfig = run.mergeConfig(Map.of(
                "rollout.merge.after.generations", "2",
                "rollout.merge.max.generations", "4",
                "rollout.merge.max.pending.age.ms", "1000",
                "http.port", "0"));
        Path log = work.resolve("merge.log");
        int records = 600; // ids exp-0..299, each written twice: later merges find them in the base
        Map<String, Long> latest = new TreeMap<>();
        RolloutGenerator generator = new RolloutGenerator("exp", 64, 3);
        for (int i = 0; i < records; i++) {
            latest.put(generator.rollout(i % 300, i).getRecordId(), (long) i);
        }
        TableLocation location = TableLocation.local(tableDir);
        try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start()) {
            produce(input, 0, records / 2);
            awaitTrue(120, () -> sealed(ingest, input, partitions) == records / 2);

            ChildJvm worker = ChildJvm.start(
                    FaultyMergeApp.class,
                    List.of(mergeConfig.toString()),
                    Map.of("ROLLOUT_FAULT_HALT_AFTER_APPENDS", "1"),
                    log);
            assertThat(worker.waitFor(180))
                    .as("halted between its first round's rows and its marks")
                    .isEqualTo(137);
            assertThat(Files.readString(log)).contains("halting after the rows of round 1, before its marks");
            assertThat(pending(ingest, input, partitions))
                    .as("the appended round is still pending")
                    .isPositive();
            assertEveryKeyOnce(ingest.table(), location);

            produce(input, records / 2, records);
            awaitTrue(120, () -> sealed(ingest, input, partitions) == records);
            worker = ChildJvm.start(
                    FaultyMergeApp.class,
                    List.of(mergeConfig.toString()),
                    Map.of("ROLLOUT_FAULT_HALT_AFTER_MERGES", "1"),
                    log);
            assertThat(worker.waitFor(180))
                    .as("halted right after its first marks")
                    .isEqualTo(137);
            assertEveryKeyOnce(ingest.table(), location);

            worker = ChildJvm.start(MergeApp.class, List.of(mergeConfig.toString()), Map.of(), log);
            try {
                awaitTrue(120, () -> pending(ingest, input, partitions) == 0);
            } finally {
                worker.stop();
            }
            Map<String, Long> read = new TreeMap<>();
            for (RolloutRow row : ingest.table().list(ListQuery.all(10_000))) {
                assertThat(read.put(row.recordId(), (long) row.rollout().getPolicyVersion()))
                        .as("read twice: %s", row.recordId())
                        .isNull();
            }
            assertThat(read).isEqualTo(latest);
            assertThat(baseKeys(location)).hasSize(latest.size()).isEqualTo(latest.keySet());
        }
    }

    /** Reads return each key once, and lance-core's reader finds each key at most once in the base. */
    private static void assertEveryKeyOnce(RolloutTable table, TableLocation location) throws Exception {
        Set<String> read = new HashSet<>();
        for (RolloutRow row : table.list(ListQuery.all(10_000))) {
            assertThat(read.add(row.recordId()))
                    .as("read twice: %s", row.recordId())
                    .isTrue();
        }
        assertThat(table.countRows()).isEqualTo(read.size());
        baseKeys(location);
    }

    /** The base's record_ids as lance-core reads them; fails on one held twice. */
    private static Set<String> baseKeys(TableLocation location) {
        return new TreeSet<>(BaseRows.live(location, null).keySet());
    }

    private static long sealed(IngestApp ingest, String input, int partitions) {
        long sealed = 0;
        for (int p = 0; p < partitions; p++) {
            sealed += ingest.table().generations().sealedRecords(ShardId.of(input, p));
        }
        return sealed;
    }

    private static int pending(IngestApp ingest, String input, int partitions) {
        int pending = 0;
        for (int p = 0; p < partitions; p++) {
            pending +=
                    ingest.table().generations().pending(ShardId.of(input, p)).size();
        }
        return pending;
    }

    /** One scenario's topics, folders and app settings: an input of 4 partitions, two events partitions. */
    private record Run(String name, Path work) {
        static final int PARTITIONS = 4;

        static Run create(String prefix) {
            String name = prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
            Run run = new Run(name, ROOT.resolve(name));
            kafka.createTopics(List.of(
                    new NewTopic(run.input(), PARTITIONS, (short) 1),
                    new NewTopic(run.generations(), 2, (short) 1),
                    new NewTopic(run.merges(), 1, (short) 1),
                    new NewTopic(name + "-dlq", 1, (short) 1)));
            return run;
        }

        String input() {
            return name + "-rollouts";
        }

        String generations() {
            return name + "-generations";
        }

        String merges() {
            return name + "-merges";
        }

        Path tableDir() {
            return work.resolve("table");
        }

        /** The ingest app: 20-row, 300 ms seals, so generations come quickly. */
        Map<String, String> ingestProps() {
            Map<String, String> props = new HashMap<>();
            props.put("bootstrap.servers", kafka.bootstrapServers());
            props.put("schema.registry.url", registry.confluentUrl());
            props.put("rollout.table.uri", tableDir().toString());
            props.put("application.id", name + "-ingest");
            props.put("rollout.input.topic", input());
            props.put("rollout.generations.topic", generations());
            props.put("rollout.dlq.topic", name + "-dlq");
            props.put("rollout.seal.max.rows", "20");
            props.put("rollout.seal.max.age.ms", "300");
            props.put("rollout.state.dir", work.resolve("ingest-state").toString());
            props.put("http.port", "0");
            return props;
        }

        /** The merge-worker's properties file, with the scenario's own settings on top. */
        Path mergeConfig(Map<String, String> settings) throws IOException {
            Map<String, String> props = new HashMap<>();
            props.put("bootstrap.servers", kafka.bootstrapServers());
            props.put("schema.registry.url", registry.confluentUrl());
            props.put("rollout.table.uri", tableDir().toString());
            props.put("application.id", name + "-merge");
            props.put("rollout.generations.topic", generations());
            props.put("rollout.merges.topic", merges());
            props.put("rollout.state.dir", work.resolve("merge-state").toString());
            props.putAll(settings);
            return writeConfig(work.resolve("merge.properties"), props);
        }
    }

    /** Records {@code [from, to)} of 300 keys, record {@code i} at policy_version {@code i}. */
    private void produce(String topic, int from, int to) {
        new Rollouts(SERVICES.cluster(), new RolloutGenerator("exp", 64, 3))
                .produceUnthrottled(
                        topic, from, to, 300, new java.util.HashMap<>(), new java.util.concurrent.atomic.AtomicLong());
    }

    private static SealedGeneration awaitPendingGeneration(IngestApp ingest, String shard) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            List<SealedGeneration> pending = ingest.table().generations().pending(shard);
            if (!pending.isEmpty()) {
                return pending.get(0);
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no pending generation in shard " + shard);
    }

    private static JsonNode get(HttpClient http, String url) {
        try {
            HttpResponse<String> response =
                    http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
            return response.statusCode() == 200 ? JSON.readTree(response.body()) : null;
        } catch (IOException e) {
            return null; // not listening yet
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void awaitTrue(int seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline) {
            if (condition.getAsBoolean()) {
                return;
            }
            Thread.sleep(250);
        }
        throw new AssertionError("condition not met within " + seconds + " s");
    }

    /**
     * Every committed event of the topic, read from its beginning to its last stable offset as of now (assigned,
     * not subscribed: no group to join, no quiet period to guess).
     */
    private List<GenerationsMerged> readMerges(String topic) {
        ConfluentAvroDeserializer<GenerationsMerged> deserializer =
                new ConfluentAvroDeserializer<>(null, GenerationsMerged.class);
        deserializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        return Topics.readToEnd(kafka.bootstrapServers(), topic, new StringDeserializer(), deserializer).stream()
                .map(r -> r.value())
                .toList();
    }

    private static Path writeConfig(Path file, Map<String, String> values) throws IOException {
        Files.createDirectories(file.getParent());
        Properties props = new Properties();
        props.putAll(values);
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }
}
