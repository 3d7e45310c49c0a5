package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.testsupport.SharedRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What the fault tests share: a broker and a registry for a test class (restartable: a broker outage is one of the
 * faults), runs of their own topics and configs, app processes that can be SIGKILLed and restarted with their logs kept,
 * a producer that rides the faults out, the log lines that show recovery, and the end check of every fault test: every
 * produced record_id readable exactly once with its latest value. Recovery times are printed ("recovery:" lines) and
 * recorded in docs/reliability.md; the bounds asserted on them are hang and regression guards, several times what a
 * loaded 2-core machine measures, not targets.
 */
final class FaultRig implements BeforeAllCallback, AfterAllCallback {
    static final Pattern SEALED =
            Pattern.compile("^(\\d\\d:\\d\\d:\\d\\d\\.\\d{3}) .*\\(([^/]+)/(\\d+)\\): sealed generation");
    static final Pattern MERGED = Pattern.compile("^(\\d\\d:\\d\\d:\\d\\d\\.\\d{3}) .*Merge round \\d+: \\d+ shards");

    final Path root;
    private int brokerPort;
    private int controllerPort;
    EmbeddedKafka kafka;
    ApicurioRegistry registry;

    FaultRig(String folder) {
        this.root = Path.of("target", folder).toAbsolutePath();
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        brokerPort = dev.rolloutingest.embedded.FreePorts.next();
        controllerPort = dev.rolloutingest.embedded.FreePorts.next();
        kafka = EmbeddedKafka.start(root.resolve("kafka-" + UUID.randomUUID()), brokerPort, controllerPort);
        registry = SharedRegistry.get(); // each run registers its own topics' subjects; the outages spare the registry
    }

    @Override
    public void afterAll(ExtensionContext context) {
        kafka.close();
    }

    /** Topics and configs of a new run: {@code tableUri} null for a table on local disk. */
    Run run(String prefix, String tableUri, Map<String, String> storage) {
        return Run.create(this, prefix, tableUri, storage);
    }

    /** A producer thread of {@code perSecond} records over {@code keys} keys of the run's input. */
    Producer producer(Run run, int keys, int perSecond) {
        return new Producer(this, run.input(), keys, perSecond);
    }

    /** Stops the broker (its data kept). */
    void stopBroker() {
        kafka.close();
    }

    /** Starts the broker again on its data and ports. */
    void startBroker() {
        kafka = EmbeddedKafka.start(kafka.dataDir(), brokerPort, controllerPort);
    }

    /**
     * A producer of rollouts that rides out the kills and the broker's restart: idempotent, every acknowledgement
     * awaited, five minutes for a send or a metadata wait.
     */
    KafkaProducer<String, Rollout> rolloutProducer() {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", registry.confluentUrl()), false);
        return new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        kafka.bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                        true,
                        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                        300_000,
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        300_000),
                new StringSerializer(),
                serializer);
    }

    /** A producer thread writing rewrites of a key space at a steady rate, remembering each key's latest version. */
    static final class Producer implements AutoCloseable {
        final Map<String, Long> latest = new TreeMap<>();
        final AtomicLong produced = new AtomicLong();
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        Producer(FaultRig rig, String topic, int keys, int perSecond) {
            thread = new Thread(
                    () -> {
                        RolloutGenerator generator = new RolloutGenerator("faults", 128, 5);
                        try (KafkaProducer<String, Rollout> producer = rig.rolloutProducer()) {
                            for (long i = 0; running.get(); i++) {
                                Rollout rollout = generator.rollout(i % keys, (int) i);
                                // every 7th record deletes its key (a tombstone): the kills hit deletes too
                                boolean delete = i % 7 == 6;
                                producer.send(new ProducerRecord<>(
                                                topic, rollout.getRecordId(), delete ? null : rollout))
                                        .get();
                                synchronized (latest) {
                                    if (delete) {
                                        latest.remove(rollout.getRecordId());
                                    } else {
                                        latest.put(rollout.getRecordId(), rollout.getPolicyVersion());
                                    }
                                }
                                produced.incrementAndGet();
                                Thread.sleep(1000 / perSecond);
                            }
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    "fault-producer");
            thread.start();
        }

        @Override
        public void close() throws InterruptedException {
            running.set(false);
            thread.join(300_000);
        }
    }

    /** Topics and configs of one scenario. */
    record Run(FaultRig rig, String name, String input, Path dir, Path table, Map<String, String> storage) {
        static Run create(FaultRig rig, String prefix, String tableUri, Map<String, String> storage) {
            String name;
            do {
                name = prefix + "-" + UUID.randomUUID().toString().substring(0, 6);
            } while (!shardsReachBothEventPartitions(name + "-rollouts"));
            Path dir = rig.root.resolve(name);
            rig.kafka.createTopics(List.of(
                    new NewTopic(name + "-rollouts", 4, (short) 1),
                    new NewTopic(name + "-generations", 2, (short) 1),
                    new NewTopic(name + "-dlq", 1, (short) 1),
                    new NewTopic(name + "-merges", 1, (short) 1)));
            return new Run(rig, name, name + "-rollouts", dir, tableUri == null ? dir.resolve("table") : null, storage);
        }

        /**
         * Shards go to the events partitions by the hash of their id, and each merge instance owns one events
         * partition: a run whose four shards all hashed to one partition would leave a merge instance idle.
         */
        private static boolean shardsReachBothEventPartitions(String input) {
            Set<Integer> partitions = new HashSet<>();
            for (int p = 0; p < 4; p++) {
                partitions.add(
                        BuiltInPartitioner.partitionForKey(ShardId.of(input, p).getBytes(StandardCharsets.UTF_8), 2));
            }
            return partitions.size() == 2;
        }

        String tableUri() {
            return table != null ? table.toString() : storage.get("uri");
        }

        TableLocation location() {
            Map<String, String> options = new HashMap<>(storage);
            options.remove("uri");
            return new TableLocation(tableUri(), options);
        }

        Path config(String app, String instance, Map<String, String> extra) throws IOException {
            Path file = dir.resolve(app + "-" + instance + ".properties");
            Files.createDirectories(dir);
            Properties props = new Properties();
            props.put("bootstrap.servers", rig.kafka.bootstrapServers());
            props.put("schema.registry.url", rig.registry.confluentUrl());
            props.put("rollout.table.uri", tableUri());
            storage.forEach((k, v) -> {
                if (!k.equals("uri")) {
                    props.put("rollout.table.storage." + k, v);
                }
            });
            props.put("application.id", name + "-" + app);
            props.put(
                    "rollout.state.dir",
                    dir.resolve(app + "-" + instance + "-state").toString());
            props.put("http.port", "0");
            props.put("rollout.input.topic", input);
            props.put("rollout.generations.topic", name + "-generations");
            props.put("rollout.dlq.topic", name + "-dlq");
            props.put("rollout.merges.topic", name + "-merges");
            props.put("rollout.seal.max.rows", "200");
            props.put("rollout.seal.max.age.ms", "1000");
            props.put("rollout.seal.check.interval.ms", "100");
            props.put("rollout.merge.after.generations", "2");
            props.put("rollout.merge.max.pending.age.ms", "1500");
            props.put("rollout.gc.interval.ms", "0");
            props.put("rollout.compaction.interval.ms", "0");
            props.putAll(extra);
            try (Writer out = Files.newBufferedWriter(file)) {
                props.store(out, null);
            }
            return file;
        }
    }

    /** One app process: restartable, its log kept across restarts. */
    static final class App implements AutoCloseable {
        final Class<?> main;
        final Path config;
        final Path log;
        ChildJvm jvm;

        App(Class<?> main, Path config, Path log) {
            this.main = main;
            this.config = config;
            this.log = log;
        }

        App start() {
            jvm = ChildJvm.start(main, List.of(config.toString()), Map.of(), log);
            return this;
        }

        long logSize() throws IOException {
            return Files.exists(log) ? Files.size(log) : 0;
        }

        /** Log lines written after {@code from} bytes. */
        List<String> linesAfter(long from) throws IOException {
            byte[] all = Files.readAllBytes(log);
            return new String(all, (int) Math.min(from, all.length), (int) Math.max(0, all.length - from))
                    .lines()
                    .toList();
        }

        @Override
        public void close() {
            if (jvm != null) {
                jvm.close();
            }
        }
    }

    /** Seconds from {@code since} (a log time) to the first line after {@code from} matching, within {@code seconds}. */
    static double secondsUntil(
            App app,
            long from,
            LocalTime since,
            Pattern pattern,
            java.util.function.Predicate<Matcher> which,
            int seconds)
            throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        while (System.currentTimeMillis() < deadline) {
            for (String line : app.linesAfter(from)) {
                Matcher m = pattern.matcher(line);
                if (m.find() && which.test(m)) {
                    return Duration.between(since, LocalTime.parse(m.group(1))).toMillis() / 1000.0;
                }
            }
            Thread.sleep(200);
        }
        return Double.POSITIVE_INFINITY;
    }

    /** Partitions this app sealed in the lines after {@code from}. */
    static List<Integer> sealedPartitions(App app, long from) throws IOException {
        List<Integer> partitions = new ArrayList<>();
        for (String line : app.linesAfter(from)) {
            Matcher m = SEALED.matcher(line);
            if (m.find() && !partitions.contains(Integer.parseInt(m.group(3)))) {
                partitions.add(Integer.parseInt(m.group(3)));
            }
        }
        return partitions;
    }

    /**
     * The partitions this app sealed in the lines after {@code from}, once it sealed at least one (within
     * {@code seconds}).
     */
    static List<Integer> awaitSealedPartitions(App app, long from, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        List<Integer> partitions = sealedPartitions(app, from);
        while (partitions.isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
            partitions = sealedPartitions(app, from);
        }
        assertThat(partitions)
                .as("partitions %s sealed within %d s", app.log.getFileName(), seconds)
                .isNotEmpty();
        return partitions;
    }

    /** Until every produced record is sealed and merged, then every key once with its latest version. */
    static void verifyEverythingOnce(Run run, Producer producer, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        Map<String, Long> expected;
        synchronized (producer.latest) {
            expected = new TreeMap<>(producer.latest);
        }
        Map<String, Long> seen = Map.of();
        int pending = -1;
        while (System.currentTimeMillis() < deadline) {
            try (RolloutTable table =
                    RolloutTable.open(run.location(), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                List<RolloutRow> rows = table.list(ListQuery.all(100_000));
                Map<String, Long> versions = new TreeMap<>();
                boolean duplicate = false;
                for (RolloutRow row : rows) {
                    duplicate |= versions.put(row.recordId(), row.rollout().getPolicyVersion()) != null;
                }
                assertThat(duplicate).as("a record_id read twice").isFalse();
                seen = versions;
                pending = 0;
                for (int p = 0; p < 4; p++) {
                    pending += table.generations()
                            .pending(ShardId.of(run.input(), p))
                            .size();
                }
                if (versions.equals(expected) && pending == 0) {
                    // lance-core's own count: the base holds each key once (merges append new keys, join the rest)
                    assertThat(table.countBaseRows())
                            .as("base rows, every key once")
                            .isEqualTo(expected.size());
                    return;
                }
            } catch (RuntimeException e) {
                // the store may still be recovering
            }
            Thread.sleep(1000);
        }
        assertThat(seen)
                .as("every produced key once with its latest version (pending %d)", pending)
                .isEqualTo(expected);
    }
}
