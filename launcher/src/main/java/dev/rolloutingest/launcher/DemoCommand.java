package dev.rolloutingest.launcher;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.NewTopic;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The embedded default: a real KRaft broker, a real schema registry (Apicurio, child process) and a table
 * store (local disk, a real S3 API with --s3, or Azure's blob API on Azurite with --azure), both apps and the read API, all on loopback; publishes
 * rollouts and shows them land, merge and become readable. This is the script (services, apps, progress, summary);
 * the table's store is {@link DemoStore}'s, the producer {@link DemoPublisher}, each second's counts {@link
 * DemoProgress}.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = "Start broker, registry and store locally, run the whole pipeline on generated rollouts, "
                + "print progress and a summary.")
final class DemoCommand implements Callable<Integer> {
    private static final String MARKER = ".rollout-ingest-demo";
    private static final String EXPERIMENT = "demo";

    @Option(names = "--records", defaultValue = "2000", description = "Rollouts to publish (default ${DEFAULT-VALUE})")
    long records;

    @Option(
            names = "--partitions",
            defaultValue = "4",
            description = "Partitions of the rollouts topic = shards (default ${DEFAULT-VALUE})")
    int partitions;

    @Option(
            names = "--payload-bytes",
            defaultValue = "1024",
            description = "binary_payload size (default ${DEFAULT-VALUE})")
    int payloadBytes;

    @Option(
            names = "--data-dir",
            defaultValue = "data/demo",
            description =
                    "Where the broker, registry and table keep their files; emptied at start (default ${DEFAULT-VALUE})")
    Path dataDir;

    @Option(names = "--s3", description = "Keep the table in the embedded S3 API server instead of on local disk")
    boolean s3;

    @Option(
            names = "--azure",
            description = "Keep the table in an embedded Azure Blob Storage emulator (Azurite, installed from npm on"
                    + " first use; needs node and npm) instead of on local disk")
    boolean azure;

    @Option(
            names = "--tables",
            defaultValue = "1",
            description = "Route rollouts of this many experiments (demo-0, demo-1, ...) to a table each under one root"
                    + " (rollout.tables.root, rollout.table.route=${experiment}); 1 = the one table (default"
                    + " ${DEFAULT-VALUE})")
    int tables;

    @Option(names = "--keep-running", description = "Stay up with the HTTP endpoints after the summary (Ctrl-C stops)")
    boolean keepRunning;

    @Option(
            names = "--timeout",
            defaultValue = "600",
            description = "Give up after this many seconds (default ${DEFAULT-VALUE})")
    long timeoutSeconds;

    @Override
    public Integer call() throws Exception {
        if (records < 1 || partitions < 1 || payloadBytes < 0 || tables < 1) {
            throw new IllegalArgumentException(
                    "--records, --partitions and --tables must be >= 1, --payload-bytes >= 0");
        }
        if (s3 && azure) {
            throw new IllegalArgumentException("--s3 and --azure each choose the table's store: give one");
        }
        boolean many = tables > 1;
        Path dir = prepare(dataDir.toAbsolutePath());
        List<AutoCloseable> open = new ArrayList<>();
        long started = System.nanoTime();
        try {
            say("starting a Kafka broker (KRaft) in %s", dir.resolve("kafka"));
            EmbeddedKafka kafka = remember(open, EmbeddedKafka.start(dir.resolve("kafka")));
            say("starting the schema registry (Apicurio) ...");
            ApicurioRegistry registry =
                    remember(open, ApicurioRegistry.start(dir.resolve("registry"), Duration.ofSeconds(180)));
            Map<String, String> table = DemoStore.start(dir, s3, azure, many, open);
            if (many) {
                table.put("rollout.table.route", "${experiment}");
                say(
                        "%d tables, one per experiment (%s-0 .. %s-%d): rollout.table.route=${experiment}",
                        tables, EXPERIMENT, EXPERIMENT, tables - 1);
            }
            kafka.createTopics(List.of(
                    new NewTopic("rollouts", partitions, (short) 1),
                    new NewTopic("rollout-generations", 1, (short) 1),
                    new NewTopic("rollout-merges", 1, (short) 1),
                    new NewTopic("rollouts-dlq", 1, (short) 1)));
            say("Kafka bootstrap servers: %s", kafka.bootstrapServers());
            say("schema registry (Confluent API): %s", registry.confluentUrl());

            Map<String, Object> common = new HashMap<>(table);
            common.put("bootstrap.servers", kafka.bootstrapServers());
            common.put("schema.registry.url", registry.confluentUrl());
            common.put("http.port", 0);
            Map<String, Object> ingestProps = new HashMap<>(common);
            ingestProps.put("rollout.seal.max.rows", (int) Math.max(50, records / partitions / 10));
            ingestProps.put("rollout.seal.max.age.ms", 1000L);
            ingestProps.put("rollout.state.dir", dir.resolve("ingest-state").toString());
            Map<String, Object> mergeProps = new HashMap<>(common);
            mergeProps.put("rollout.merge.after.generations", 4);
            mergeProps.put("rollout.merge.max.pending.age.ms", 2000L);
            mergeProps.put("rollout.gc.interval.ms", 10_000L);
            mergeProps.put("rollout.gc.grace.ms", 5_000L);
            mergeProps.put("rollout.compaction.interval.ms", 30_000L);
            mergeProps.put("rollout.state.dir", dir.resolve("merge-state").toString());

            IngestApp ingest = remember(open, new IngestApp(IngestConfig.of(ingestProps)).start());
            MergeApp merge = remember(open, new MergeApp(MergeConfig.of(mergeProps)).start());
            TableCatalog catalog = ingest.tables();
            HttpEndpoint readApi = remember(open, new HttpEndpoint("127.0.0.1", 0));
            new ReadApi(
                            catalog,
                            null,
                            Duration.ZERO,
                            IngestConfig.of(ingestProps).input().inputTopic())
                    .mount(readApi);
            readApi.route(
                    "/health",
                    HttpAccess.Access.PUBLIC,
                    exchange -> HttpEndpoint.Response.json(200, Map.of("app", "rollout-read", "table", catalog.uri())));
            readApi.start();
            FlightReads flight = remember(
                    open,
                    FlightReads.start(
                            catalog,
                            IngestConfig.of(ingestProps).input().inputTopic(),
                            "127.0.0.1",
                            0,
                            HttpAccess.OPEN,
                            dev.rolloutingest.runtime.HttpLimits.DEFAULTS));
            say("ingest   /metrics /health  %s", ingest.http().baseUrl());
            say(
                    "merge    /metrics /health /pending /cooldowns /merge/{shard}  %s",
                    merge.http().baseUrl());
            say("read API %s  %s", many ? "/tables /tables/{table}/rollouts" : "/rollouts", readApi.baseUrl());
            say("Arrow Flight reads (scan and tail by shares, for data-parallel trainers)  %s", flight.location());

            DemoPublisher publisher = new DemoPublisher(
                    kafka.bootstrapServers(), registry.confluentUrl(), EXPERIMENT, records, tables, payloadBytes);
            long pipelineStart = System.nanoTime();
            say("publishing %d rollouts (%d-byte payloads) to %d partitions", records, payloadBytes, partitions);
            publisher.start();

            DemoProgress last = null;
            long deadline =
                    System.nanoTime() + Duration.ofSeconds(timeoutSeconds).toNanos();
            while (true) {
                Thread.sleep(1000);
                if (publisher.error() != null) {
                    throw new IllegalStateException("publishing failed: " + publisher.error(), publisher.error());
                }
                DemoProgress now = DemoProgress.read(
                        publisher.acked(),
                        ingest.registry(),
                        merge.registry(),
                        catalog.opened().values(),
                        pipelineStart);
                System.out.println(now.line(last, records));
                last = now;
                if (now.produced() == records && now.readable() == records && now.pending() == 0) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                            "not done within " + timeoutSeconds + " s: " + now.line(null, records));
                }
            }
            double seconds = (System.nanoTime() - pipelineStart) / 1e9;
            System.out.printf(
                    "%ndone: %d rollouts published, sealed into %d generations, merged, and readable in %.1f s"
                            + " (%.0f rollouts/s end to end)%n",
                    records, last.generations(), seconds, records / seconds);
            System.out.printf(
                    "summary: produced=%d sealed_rows=%d generations=%d merged_generations=%d base_rows=%d "
                            + "readable=%d pending=%d seconds=%.1f throughput=%.0f table=%s%n",
                    last.produced(),
                    last.sealedRows(),
                    last.generations(),
                    last.mergedGenerations(),
                    last.baseRows(),
                    last.readable(),
                    last.pending(),
                    seconds,
                    records / seconds,
                    catalog.uri());
            if (many) {
                System.out.printf(
                        "try: curl %s/tables   or   curl '%s/tables/%s-0/rollouts?limit=5'   or   ./rollout-ingest tables"
                                + " --root %s%n",
                        readApi.baseUrl(), readApi.baseUrl(), EXPERIMENT, catalog.uri());
            } else {
                System.out.printf(
                        "try: curl %s/rollouts/%s-0   or   curl '%s/rollouts?experiment=%s&limit=5'%n",
                        readApi.baseUrl(), EXPERIMENT, readApi.baseUrl(), EXPERIMENT);
            }
            if (keepRunning) {
                String storage = DemoStore.storageArgs(table);
                say("the broker, registry and table stay up; point other commands at them from another terminal:");
                System.out.printf(
                        "  ./rollout-ingest produce --bootstrap-servers %s --schema-registry-url %s --count 1000%n",
                        kafka.bootstrapServers(), registry.confluentUrl());
                String tableArg = many
                        ? "--root " + table.get("rollout.tables.root") + " --table " + EXPERIMENT + "-0"
                        : "--table " + table.get("rollout.table.uri");
                System.out.printf(
                        "  ./rollout-ingest status %s%s --bootstrap-servers %s%n",
                        tableArg, storage, kafka.bootstrapServers());
                System.out.printf(
                        "  ./rollout-ingest get %s%s %s-0%n", tableArg, storage, many ? EXPERIMENT + "-0" : EXPERIMENT);
                say("for other producers (the README's Python examples read these):");
                System.out.printf(
                        "  export BOOTSTRAP_SERVERS=%s%n  export SCHEMA_REGISTRY_URL=%s%n",
                        kafka.bootstrapServers(), registry.confluentUrl());
                say("for trainers (python/rollout_ingest, a share per rank):");
                System.out.printf(
                        "  PYTHONPATH=python python3 -c \"from rollout_ingest import RolloutTail;"
                                + " print(sum(1 for _ in RolloutTail('%s', follow=False)))\"%n",
                        flight.location());
                Launcher.KeepRunning.request();
                say("running until Ctrl-C (started %.0f s ago)", (System.nanoTime() - started) / 1e9);
                CountDownLatch stop = new CountDownLatch(1);
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    closeAll(open);
                    stop.countDown();
                }));
                stop.await();
                return 0;
            }
        } catch (Throwable e) {
            closeAll(open);
            throw e;
        }
        closeAll(open);
        return 0;
    }

    private static Path prepare(Path dir) throws IOException {
        if (Files.isDirectory(dir)) {
            try (Stream<Path> entries = Files.list(dir)) {
                boolean empty = entries.findAny().isEmpty();
                if (!empty && !Files.exists(dir.resolve(MARKER))) {
                    throw new IllegalArgumentException("--data-dir " + dir + " is not empty and holds no earlier demo;"
                            + " choose an empty or new directory");
                }
            }
            FileTrees.deleteRecursively(dir);
        }
        Files.createDirectories(dir);
        Files.writeString(dir.resolve(MARKER), "data of `rollout-ingest demo`; emptied by the next demo run\n");
        return dir;
    }

    static <T extends AutoCloseable> T remember(List<AutoCloseable> open, T resource) {
        open.add(resource);
        return resource;
    }

    private static void closeAll(List<AutoCloseable> open) {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                System.err.println("while stopping: " + e);
            }
        }
        open.clear();
    }

    static void say(String format, Object... args) {
        System.out.println("demo: " + String.format(format, args));
    }
}
