package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.lance.Dataset;
import org.lance.ipc.ScanOptions;

/**
 * The sustained run: an unthrottled producer, the ingest app and the merge-worker (each in its own JVM,
 * default settings) on the embedded services for a fixed time. Every second it samples each shard's pending
 * generations; at the end it drains, then checks every produced record is in the base exactly once. Merge
 * capacity is the rows merged per second of merge work (round prepare + commit time, from the merge-worker's
 * /metrics), against the rows ingest sealed per second of wall time in the same run.
 *
 * <p>Over 300 lines because it is one run's timeline: start the processes, sample every second, drain, count every id.
 */
final class SustainedBench {
    private static final String TOPIC = "rollouts";
    private static final Pattern SUM =
            Pattern.compile("(?m)^rollout_merge_round_(prepare|commit)_seconds_sum\\{[^}]*\\} (\\S+)$");

    private final Path dir;
    private final int seconds;
    private final int partitions;
    private final int payloadBytes;
    /** 0: one table; otherwise records of this many experiments routed to a table each under a root. */
    private final int tables;

    SustainedBench(Path dir, int seconds, int partitions, int payloadBytes, int tables) {
        this.dir = dir.toAbsolutePath().resolve("sustained");
        this.seconds = seconds;
        this.partitions = partitions;
        this.payloadBytes = payloadBytes;
        this.tables = tables;
    }

    /** What the run reads of the table or tables it fills. */
    private interface Target extends AutoCloseable {
        /** Records sealed into generations, over every shard (and table). */
        long sealed();

        /** Records in the base (or bases). */
        long baseRows();

        /** The shard (of a table) with the most pending generations now, and how many. */
        Worst worst() throws Exception;

        /** Pending generations, over every shard (and table). */
        int pendingTotal() throws Exception;

        /** Every record_id of the base (or of each table's base, with the table's name), read by lance-core alone. */
        void baseIds(java.util.function.BiConsumer<String, String> id) throws Exception;

        @Override
        void close();
    }

    private record Worst(String where, int pending, String perShard) {}

    /** The table of a one-table run, read directly. */
    private final class OneTable implements Target {
        private final RolloutTable table;
        private final Path tableDir;

        OneTable(RolloutTable table, Path tableDir) {
            this.table = table;
            this.tableDir = tableDir;
        }

        @Override
        public long sealed() {
            return SustainedBench.sealed(table);
        }

        @Override
        public long baseRows() {
            return table.countBaseRows();
        }

        @Override
        public Worst worst() {
            int worst = 0;
            String worstShard = "";
            Map<String, Long> watermarks = table.generations().watermarks();
            StringBuilder perShard = new StringBuilder();
            for (int p = 0; p < partitions; p++) {
                String shard = ShardId.of(TOPIC, p);
                int pending = table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
                perShard.append(p == 0 ? "" : ",").append(pending);
                if (pending > worst) {
                    worst = pending;
                    worstShard = shard;
                }
            }
            return new Worst(worstShard, worst, perShard.toString());
        }

        @Override
        public int pendingTotal() {
            Map<String, Long> watermarks = table.generations().watermarks();
            int pending = 0;
            for (int p = 0; p < partitions; p++) {
                String shard = ShardId.of(TOPIC, p);
                pending += table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
            }
            return pending;
        }

        @Override
        public void baseIds(java.util.function.BiConsumer<String, String> id) throws Exception {
            readIds(tableDir, "default", id);
        }

        @Override
        public void close() {
            table.close();
        }
    }

    /**
     * The tables of a many-tables run: pending counts from the merge-worker's /pending (every table and shard in one
     * answer, no listing of 100 tables a second), records from the tables themselves.
     */
    private final class ManyTables implements Target {
        private final Path root;
        private final int mergePort;
        private final TableCatalog catalog;

        ManyTables(Path root, int mergePort) {
            this.root = root;
            this.mergePort = mergePort;
            this.catalog = TableCatalog.under(
                    TableLocation.local(root),
                    TableSettings.DEFAULTS
                            .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                            .with(TableSettings.PENDING_MAX_GENERATIONS, 0),
                    new SimpleMeterRegistry(),
                    tables);
        }

        private List<RolloutTable> all() {
            return catalog.names().stream().map(catalog::require).toList();
        }

        /**
         * Offsets sealed, per partition the furthest any table's seals (or merged watermark) reach: a seal covers its
         * partition's whole range in every table that got rows of it, so summing tables would count records again.
         */
        @Override
        public long sealed() {
            long[] next = new long[partitions];
            for (RolloutTable table : all()) {
                Map<String, Long> watermarks = table.generations().watermarks();
                for (int p = 0; p < partitions; p++) {
                    String shard = ShardId.of(TOPIC, p);
                    List<Long> generations = table.generations().sealedBetween(shard, 0, -1L);
                    long last = generations.isEmpty() ? 0 : generations.get(generations.size() - 1);
                    next[p] = Math.max(next[p], Math.max(last, watermarks.getOrDefault(shard, 0L)));
                }
            }
            return java.util.Arrays.stream(next).sum();
        }

        @Override
        public long baseRows() {
            return all().stream().mapToLong(RolloutTable::countBaseRows).sum();
        }

        @Override
        public Worst worst() throws Exception {
            com.fasterxml.jackson.databind.JsonNode pending = pending();
            int worst = 0;
            String where = "";
            for (com.fasterxml.jackson.databind.JsonNode shard : pending.path("shards")) {
                if (shard.path("pending").asInt() > worst) {
                    worst = shard.path("pending").asInt();
                    where = shard.path("table").asText() + "/"
                            + shard.path("shard").asText();
                }
            }
            return new Worst(
                    where, worst, Integer.toString(pending.path("total").asInt()));
        }

        @Override
        public int pendingTotal() throws Exception {
            return pending().path("total").asInt();
        }

        private com.fasterxml.jackson.databind.JsonNode pending() throws Exception {
            return pendingOf(mergePort);
        }

        @Override
        public void baseIds(java.util.function.BiConsumer<String, String> id) throws Exception {
            for (String name : catalog.names()) {
                readIds(root.resolve(name), name, id);
            }
        }

        @Override
        public void close() {
            catalog.close();
        }
    }

    /** The experiment, and so the table, of record {@code index} in a many-tables run. */
    static String experimentOf(int index, int tables) {
        return String.format("exp-%03d", index % tables);
    }

    void run() throws Exception {
        FileTrees.deleteRecursively(dir);
        Path tableDir = dir.resolve("table");
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(dir.resolve("registry"), Duration.ofSeconds(120))) {
            createTopics(kafka);
            int mergePort = FreePorts.next();
            Path ingestConfig = config("ingest", kafka, registry, tableDir, FreePorts.next());
            Path mergeConfig = config("merge", kafka, registry, tableDir, mergePort);
            int countTrigger = 8; // rollout.merge.after.generations, default
            System.out.printf(
                    "sustained run: %d s, producer unthrottled, %d partitions, %d-byte payloads, %s, ingest and"
                            + " merge-worker in their own JVMs (-Xmx1g) with default settings%n%n",
                    seconds,
                    partitions,
                    payloadBytes,
                    tables == 0
                            ? "one table"
                            : tables + " tables (rollout.table.route ${experiment}, records of every table in every"
                                    + " partition)");
            try (ChildJvm ingest = ChildJvm.start(
                            IngestApp.class,
                            List.of(ingestConfig.toString()),
                            Map.of(),
                            dir.resolve("ingest.log"),
                            "-Xmx1g");
                    ChildJvm merge = ChildJvm.start(
                            MergeApp.class,
                            List.of(mergeConfig.toString()),
                            Map.of(),
                            dir.resolve("merge.log"),
                            "-Xmx1g")) {
                BitSet acked = new BitSet();
                AtomicLong produced = new AtomicLong();
                AtomicBoolean producing = new AtomicBoolean(true);
                Thread producer =
                        new Thread(() -> produce(kafka, registry, producing, acked, produced), "sustained-producer");
                Target table = tables == 0
                        ? new OneTable(awaitTable(tableDir, ingest), tableDir)
                        : new ManyTables(tableDir, mergePort);
                try {
                    double busyAtStart = awaitMergeMetrics(mergePort, merge);
                    long start = System.nanoTime();
                    producer.start();
                    int maxPending = 0;
                    String maxPendingShard = "";
                    int maxPendingAt = 0;
                    long sealedAtStart = table.sealed();
                    long baseAtStart = table.baseRows();
                    try (Writer samples = Files.newBufferedWriter(dir.resolve("pending.tsv"), StandardCharsets.UTF_8)) {
                        samples.write("t\tpending_per_shard\n");
                        System.out.println(
                                "| t | produced | sealed | in base | pending generations, max over shards |");
                        System.out.println("|---|---|---|---|---|");
                        for (int t = 1; t <= seconds; t++) {
                            long due = start + t * 1_000_000_000L;
                            long wait = due - System.nanoTime();
                            if (wait > 0) {
                                Thread.sleep(wait / 1_000_000);
                            }
                            Worst worst = table.worst();
                            if (worst.pending() > maxPending) {
                                maxPending = worst.pending();
                                maxPendingShard = worst.where();
                                maxPendingAt = t;
                            }
                            samples.write(t + "\t" + worst.perShard() + "\n");
                            samples.flush();
                            if (t % 15 == 0 || t == seconds) {
                                System.out.printf(
                                        "| %d s | %,d | %,d | %,d | %d |%n",
                                        t, produced.get(), table.sealed(), table.baseRows(), worst.pending());
                            }
                            if (!ingest.isAlive() || !merge.isAlive()) {
                                throw new IllegalStateException("an app died; see " + dir);
                            }
                        }
                    }
                    double wall = (System.nanoTime() - start) / 1e9;
                    long sealedInRun = table.sealed() - sealedAtStart;
                    long mergedInRun = table.baseRows() - baseAtStart;
                    double busy = mergeBusySeconds(mergePort) - busyAtStart;
                    producing.set(false);
                    producer.join();
                    double ingestRate = sealedInRun / wall;
                    double mergeCapacity = mergedInRun / busy;
                    System.out.printf(
                            "%npending generations per shard%s, sampled every second: max %d (%s at %d s); count trigger"
                                    + " %d, bound 2x = %d: %s%n",
                            tables == 0 ? "" : " of every table",
                            maxPending,
                            maxPendingShard,
                            maxPendingAt,
                            countTrigger,
                            2 * countTrigger,
                            maxPending <= 2 * countTrigger ? "within" : "EXCEEDED");
                    System.out.printf(
                            "ingest: %,.0f rows/s sealed (wall time); merge: %,d rows in %.1f s of round work ="
                                    + " %,.0f rows/s capacity; merge capacity / ingest = %.2f%n",
                            ingestRate, mergedInRun, busy, mergeCapacity, mergeCapacity / ingestRate);
                    System.out.printf(
                            "peak RSS: ingest %d MiB, merge-worker %d MiB%n",
                            ProcessMemory.hwmMiB(ingest.pid()), ProcessMemory.hwmMiB(merge.pid()));
                    verify(table, acked, produced.get());
                } finally {
                    producing.set(false);
                    table.close();
                }
                ingest.stop();
                merge.stop();
            }
        }
        // A 300 s run leaves ~30 GB (broker log, generations, base): only a failed run keeps it, to look at. The
        // apps' logs and the per-second samples are kept beside it, small, to read where a round's time went.
        keepLogs();
        FileTrees.deleteRecursively(dir);
    }

    private void keepLogs() throws IOException {
        Path kept = dir.resolveSibling("sustained-logs");
        FileTrees.deleteRecursively(kept);
        Files.createDirectories(kept);
        for (String name : List.of("ingest.log", "merge.log", "pending.tsv")) {
            Path from = dir.resolve(name);
            if (Files.exists(from)) {
                Files.copy(from, kept.resolve(name));
            }
        }
        System.out.println("logs and per-second samples kept in " + kept);
    }

    /**
     * Each side alone, in one run: the ingest app with an unthrottled producer for {@code seconds} and no
     * merge-worker (rows sealed per second of wall time); then, the producer stopped and everything sealed, the
     * merge-worker alone draining that backlog (rows merged per second of wall time, from its first merge to an
     * empty backlog). Their ratio is what merge can fold per row ingest can seal.
     */
    void runAlone() throws Exception {
        FileTrees.deleteRecursively(dir);
        Path tableDir = dir.resolve("table");
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(dir.resolve("registry"), Duration.ofSeconds(120))) {
            createTopics(kafka);
            int mergePort = FreePorts.next();
            Path ingestConfig = config("ingest", kafka, registry, tableDir, FreePorts.next());
            Path mergeConfig = config("merge", kafka, registry, tableDir, mergePort);
            System.out.printf(
                    "capacity alone: ingest for %d s (producer unthrottled, %d partitions, %d-byte payloads, no"
                            + " merge-worker), then the merge-worker alone drains the backlog; apps in their own JVMs"
                            + " (-Xmx1g), default settings%n",
                    seconds, partitions, payloadBytes);
            try (ChildJvm ingest = ChildJvm.start(
                    IngestApp.class, List.of(ingestConfig.toString()), Map.of(), dir.resolve("ingest.log"), "-Xmx1g")) {
                BitSet acked = new BitSet();
                AtomicLong produced = new AtomicLong();
                AtomicBoolean producing = new AtomicBoolean(true);
                Thread producer =
                        new Thread(() -> produce(kafka, registry, producing, acked, produced), "capacity-producer");
                RolloutTable table = awaitTable(tableDir, ingest);
                try {
                    long sealedAtStart = sealed(table);
                    long start = System.nanoTime();
                    producer.start();
                    Thread.sleep(seconds * 1000L);
                    long sealedInRun = sealed(table) - sealedAtStart;
                    double ingestRate = sealedInRun / ((System.nanoTime() - start) / 1e9);
                    producing.set(false);
                    producer.join();
                    long deadline = System.nanoTime() + 300_000_000_000L;
                    while (sealed(table) < acked.cardinality() && System.nanoTime() < deadline) {
                        Thread.sleep(500);
                    }
                    long backlog = sealed(table);
                    int pending = 0;
                    Map<String, Long> watermarks = table.generations().watermarks();
                    for (String shard : table.generations().shards()) {
                        pending += table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
                    }
                    System.out.printf(
                            "ingest alone: %,d rows sealed in %d s = %,.0f rows/s; backlog %,d rows in %d generations%n",
                            sealedInRun, seconds, ingestRate, backlog, pending);
                    try (ChildJvm merge = ChildJvm.start(
                            MergeApp.class,
                            List.of(mergeConfig.toString()),
                            Map.of(),
                            dir.resolve("merge.log"),
                            "-Xmx1g")) {
                        while (table.countBaseRows() == 0) {
                            if (!merge.isAlive()) {
                                throw new IllegalStateException("the merge-worker died; see " + dir);
                            }
                            Thread.sleep(20);
                        }
                        long mergeStart = System.nanoTime();
                        long baseAtStart = table.countBaseRows();
                        while (table.countBaseRows() < backlog) {
                            if (!merge.isAlive()) {
                                throw new IllegalStateException("the merge-worker died; see " + dir);
                            }
                            Thread.sleep(20);
                        }
                        double drain = (System.nanoTime() - mergeStart) / 1e9;
                        double mergeRate = (backlog - baseAtStart) / drain;
                        System.out.printf(
                                "merge alone: %,d rows merged in %.1f s (from its first merge) = %,.0f rows/s; peak RSS"
                                        + " %d MiB%n",
                                backlog - baseAtStart, drain, mergeRate, ProcessMemory.hwmMiB(merge.pid()));
                        System.out.printf("merge alone / ingest alone = %.2f%n", mergeRate / ingestRate);
                        verify(new OneTable(table, tableDir), acked, produced.get());
                        merge.stop();
                    }
                } finally {
                    producing.set(false);
                    table.close();
                }
                ingest.stop();
            }
        }
        FileTrees.deleteRecursively(dir);
    }

    /**
     * Merge capacity against merge-worker instances, side by side in one run: the ingest app alone seals a backlog for
     * {@code seconds} (producer unthrottled), the table root is kept aside, and each run restores it and drains it with
     * that many merge-worker JVMs of one group (a group of its own per run, reading every GenerationSealed event from
     * the start), timed from the first row merged to the last.
     */
    void runInstances(int[] instanceCounts, boolean pinCpus) throws Exception {
        FileTrees.deleteRecursively(dir);
        Path tableDir = dir.resolve("table");
        Path kept = dir.resolve("table-backlog");
        int most = java.util.Arrays.stream(instanceCounts).max().orElse(1);
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(dir.resolve("registry"), Duration.ofSeconds(120))) {
            createTopics(kafka, Math.max(2, most));
            Path ingestConfig = config("ingest", kafka, registry, tableDir, FreePorts.next());
            System.out.printf(
                    "merge-worker instances: ingest alone for %d s (producer unthrottled, %d partitions, %d-byte payloads,"
                            + " %s), then the same backlog drained by %s merge-worker JVMs (-Xmx1g, default settings; %d"
                            + " partitions of the sealed topic)%s%n%n",
                    seconds,
                    partitions,
                    payloadBytes,
                    tables == 0 ? "one table" : tables + " tables",
                    java.util.Arrays.toString(instanceCounts),
                    Math.max(2, most),
                    pinCpus ? "; worker i pinned to CPU i (taskset): one CPU each" : "");
            long backlog;
            BitSet acked = new BitSet();
            AtomicLong produced = new AtomicLong();
            try (ChildJvm ingest = ChildJvm.start(
                    IngestApp.class, List.of(ingestConfig.toString()), Map.of(), dir.resolve("ingest.log"), "-Xmx1g")) {
                AtomicBoolean producing = new AtomicBoolean(true);
                Thread producer =
                        new Thread(() -> produce(kafka, registry, producing, acked, produced), "instances-producer");
                producer.start();
                Thread.sleep(seconds * 1000L);
                producing.set(false);
                producer.join();
                try (Target target = target(tableDir, ingest, 0)) {
                    long deadline = System.nanoTime() + 600_000_000_000L;
                    while (target.sealed() < acked.cardinality() && System.nanoTime() < deadline) {
                        if (!ingest.isAlive()) {
                            throw new IllegalStateException("the ingest app died; see " + dir);
                        }
                        Thread.sleep(1_000);
                    }
                    backlog = target.sealed();
                }
                ingest.stop();
            }
            copyTree(tableDir, kept);
            System.out.printf("backlog: %,d rows sealed, none merged%n%n", backlog);
            System.out.println(
                    "| run | merge-workers | drain (from their start) | rows/s merged | vs the first run | peak RSS MiB per worker |");
            System.out.println("|---|---|---|---|---|---|");
            double first = Double.NaN;
            for (int run = 0; run < instanceCounts.length; run++) {
                int count = instanceCounts[run];
                FileTrees.deleteRecursively(tableDir);
                copyTree(kept, tableDir);
                List<ChildJvm> workers = new ArrayList<>();
                List<Integer> ports = new ArrayList<>();
                try {
                    for (int i = 0; i < count; i++) {
                        int port = FreePorts.next();
                        ports.add(port);
                        String app = "merge-" + run + "-" + i;
                        Path config = config(
                                app, kafka, registry, tableDir, port, Map.of("application.id", "merge-run-" + run));
                        // one CPU per worker, as one machine each would have: the JVM sizes its pools to it
                        List<String> launcher = pinCpus
                                ? List.of(
                                        "taskset",
                                        "-c",
                                        Integer.toString(
                                                i % Runtime.getRuntime().availableProcessors()))
                                : List.of();
                        workers.add(ChildJvm.start(
                                launcher,
                                MergeApp.class,
                                List.of(config.toString()),
                                Map.of(),
                                dir.resolve(app + ".log"),
                                "-Xmx1g"));
                    }
                    try (Target target = target(tableDir, workers.get(0), ports.get(0))) {
                        // the workers' /pending, not the tables: counting 100 bases would load the cores measured
                        long start = System.nanoTime();
                        int empty = 0;
                        boolean seen = false;
                        while (empty < 2 || !seen || target.baseRows() < backlog) {
                            requireAlive(workers);
                            Thread.sleep(250);
                            int pending = pendingTotal(ports);
                            seen |= pending > 0;
                            empty = pending == 0 ? empty + 1 : 0;
                        }
                        double drain = (System.nanoTime() - start) / 1e9;
                        double rate = backlog / drain;
                        if (Double.isNaN(first)) {
                            first = rate;
                        }
                        List<Long> rss = new ArrayList<>();
                        workers.forEach(w -> rss.add(ProcessMemory.hwmMiB(w.pid())));
                        System.out.printf(
                                "| %d | %d | %.1f s | %,.0f | %.2f | %s |%n",
                                run + 1,
                                count,
                                drain,
                                rate,
                                rate / first,
                                rss.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(" / ")));
                        if (run == instanceCounts.length - 1) {
                            verify(target, acked, produced.get()); // every record once, in its own table
                        }
                    }
                } finally {
                    for (ChildJvm worker : workers) {
                        worker.stop();
                    }
                }
            }
        }
        FileTrees.deleteRecursively(dir);
    }

    private Target target(Path tableDir, ChildJvm app, int mergePort) throws Exception {
        return tables == 0 ? new OneTable(awaitTable(tableDir, app), tableDir) : new ManyTables(tableDir, mergePort);
    }

    /** A merge-worker's /pending: its tasks' table shards with their pending generations, and their total. */
    private static com.fasterxml.jackson.databind.JsonNode pendingOf(int port)
            throws IOException, InterruptedException {
        return new com.fasterxml.jackson.databind.ObjectMapper().readTree(get(port, "/pending"));
    }

    /** The body of a GET of a local app's HTTP endpoint. */
    private static String get(int port, String path) throws IOException, InterruptedException {
        return HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    /** Pending generations over the workers' /pending (each answers for its own tasks); -1 while one has no answer. */
    private static int pendingTotal(List<Integer> ports) {
        int total = 0;
        for (int port : ports) {
            try {
                total += pendingOf(port).path("total").asInt();
            } catch (IOException e) {
                return -1; // not up yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return -1;
            }
        }
        return total;
    }

    private void requireAlive(List<ChildJvm> workers) {
        if (workers.stream().anyMatch(w -> !w.isAlive())) {
            throw new IllegalStateException("a merge-worker died; see " + dir);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (java.util.stream.Stream<Path> paths = Files.walk(from)) {
            for (Path path : (Iterable<Path>) paths::iterator) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(path, target);
                }
            }
        }
    }

    private void createTopics(EmbeddedKafka kafka) {
        createTopics(kafka, 2);
    }

    private void createTopics(EmbeddedKafka kafka, int generationPartitions) {
        kafka.createTopics(List.of(
                new NewTopic(TOPIC, partitions, (short) 1),
                new NewTopic("rollout-generations", generationPartitions, (short) 1),
                new NewTopic("rollout-merges", 1, (short) 1),
                new NewTopic("rollouts-dlq", 1, (short) 1)));
    }

    /**
     * Waits until every acknowledged record is merged, then counts each id in the base (of its own table, in a
     * many-tables run: a record in another table counts as misrouted).
     */
    private void verify(Target table, BitSet acked, long produced) throws Exception {
        long deadline = System.nanoTime() + 600_000_000_000L;
        long drainStart = System.nanoTime();
        while (System.nanoTime() < deadline) {
            if (table.pendingTotal() == 0 && table.baseRows() >= acked.cardinality()) {
                break;
            }
            Thread.sleep(1_000);
        }
        System.out.printf("drained the rest in %.1f s%n", (System.nanoTime() - drainStart) / 1e9);
        BitSet seen = new BitSet();
        long[] counts = new long[4]; // rows, duplicated, unknown, misrouted
        java.util.Set<String> tablesSeen = new java.util.TreeSet<>();
        table.baseIds((name, id) -> {
            counts[0]++;
            tablesSeen.add(name);
            int index = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
            if (!acked.get(index)) {
                counts[2]++; // sent but not acknowledged: allowed (the send may have landed)
            }
            if (seen.get(index)) {
                counts[1]++;
            }
            if (tables > 0 && !name.equals(experimentOf(index, tables))) {
                counts[3]++;
            }
            seen.set(index);
        });
        BitSet lost = (BitSet) acked.clone();
        lost.andNot(seen);
        System.out.printf(
                "end: %,d records acknowledged (%,d sent), %,d rows in the base%s: %d lost, %d duplicated%s"
                        + " (%d rows of sends that were not acknowledged)%n",
                acked.cardinality(),
                produced,
                counts[0],
                tables == 0 ? "" : "s of " + tablesSeen.size() + " tables",
                lost.cardinality(),
                counts[1],
                tables == 0 ? "" : ", " + counts[3] + " in another table than their own",
                counts[2]);
    }

    /** Every record_id of the base at {@code tableDir}, read by lance-core alone. */
    private static void readIds(Path tableDir, String name, java.util.function.BiConsumer<String, String> id)
            throws Exception {
        try (BufferAllocator allocator = new RootAllocator();
                Dataset base = Dataset.open(tableDir.toString(), allocator);
                var scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of("record_id"))
                        .batchSize(65_536)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VarCharVector ids = (VarCharVector) reader.getVectorSchemaRoot().getVector("record_id");
                for (int i = 0; i < ids.getValueCount(); i++) {
                    id.accept(name, new String(ids.get(i), StandardCharsets.UTF_8));
                }
            }
        }
    }

    private static long sealed(RolloutTable table) {
        long sealed = 0;
        for (String shard : table.generations().shards()) {
            sealed += table.generations().sealedRecords(shard);
        }
        return sealed;
    }

    private void produce(
            EmbeddedKafka kafka,
            ApicurioRegistry registry,
            AtomicBoolean producing,
            BitSet acked,
            AtomicLong produced) {
        ConfluentAvroSerializer<Rollout> serializer = BenchClients.rolloutSerializer(registry);
        RolloutGenerator generator = new RolloutGenerator("sus", payloadBytes, 11);
        try (KafkaProducer<byte[], byte[]> producer = BenchClients.bulkProducer(kafka)) {
            for (int i = 0; producing.get(); i++) {
                Rollout rollout = generator.rollout(i, 0);
                if (tables > 0) {
                    rollout.setExperiment(experimentOf(i, tables));
                }
                int index = i;
                producer.send(
                        new ProducerRecord<>(
                                TOPIC,
                                rollout.getRecordId().getBytes(StandardCharsets.UTF_8),
                                serializer.serialize(TOPIC, rollout)),
                        (metadata, error) -> {
                            if (error == null) {
                                synchronized (acked) {
                                    acked.set(index);
                                }
                            }
                        });
                produced.incrementAndGet();
            }
            producer.flush();
        }
    }

    /** The merge-worker's HTTP endpoint starts after the ingest app created the table: wait for it. */
    private static double awaitMergeMetrics(int port, ChildJvm merge) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            try {
                return mergeBusySeconds(port);
            } catch (IOException e) {
                if (System.nanoTime() > deadline || !merge.isAlive()) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    /** Seconds the merge-worker spent preparing and committing rounds, from its /metrics. */
    private static double mergeBusySeconds(int port) throws Exception {
        String body = get(port, "/metrics");
        double sum = 0;
        Matcher m = SUM.matcher(body);
        while (m.find()) {
            sum += Double.parseDouble(m.group(2));
        }
        return sum;
    }

    private RolloutTable awaitTable(Path tableDir, ChildJvm app) throws Exception {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            try {
                return RolloutTable.open(
                        TableLocation.local(tableDir),
                        TableSettings.DEFAULTS
                                .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                                .with(TableSettings.PENDING_MAX_GENERATIONS, 0),
                        new SimpleMeterRegistry());
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline || !app.isAlive()) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private Path config(String app, EmbeddedKafka kafka, ApicurioRegistry registry, Path tableDir, int port)
            throws Exception {
        return config(app, kafka, registry, tableDir, port, Map.of());
    }

    private Path config(
            String app,
            EmbeddedKafka kafka,
            ApicurioRegistry registry,
            Path tableDir,
            int port,
            Map<String, String> overrides)
            throws Exception {
        Path work = dir.resolve(app);
        Files.createDirectories(work);
        Properties props = new Properties();
        props.put("bootstrap.servers", kafka.bootstrapServers());
        props.put("schema.registry.url", registry.confluentUrl());
        if (tables == 0) {
            props.put("rollout.table.uri", tableDir.toString());
        } else {
            props.put("rollout.tables.root", tableDir.toString());
            props.put("rollout.tables.max", Integer.toString(tables));
            if (app.equals("ingest")) {
                props.put("rollout.table.route", "${experiment}");
            }
        }
        props.put("rollout.state.dir", work.resolve("state").toString());
        props.put("http.port", Integer.toString(port));
        props.putAll(overrides);
        Path file = work.resolve(app + ".properties");
        try (Writer out = Files.newBufferedWriter(file)) {
            props.store(out, null);
        }
        return file;
    }
}
