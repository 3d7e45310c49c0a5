package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.merge.MergeApp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The merge-instances suite, merge capacity against merge-worker instances side by side in one run: the ingest app
 * alone seals a backlog for {@code seconds} (producer unthrottled), the table root is kept aside, and each run
 * restores it and drains it with that many merge-worker JVMs of one group (a group of its own per run, reading every
 * GenerationSealed event from the start), timed from the first row merged to the last.
 */
final class MergeInstancesBench {
    private final SustainedRig rig;

    MergeInstancesBench(SustainedRig rig) {
        this.rig = rig;
    }

    void run(int[] instanceCounts, boolean pinCpus) throws Exception {
        Path dir = rig.dir();
        FileTrees.deleteRecursively(dir);
        Path tableDir = dir.resolve("table");
        Path kept = dir.resolve("table-backlog");
        int most = java.util.Arrays.stream(instanceCounts).max().orElse(1);
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(dir.resolve("registry"), Duration.ofSeconds(120))) {
            rig.createTopics(kafka, Math.max(2, most));
            Path ingestConfig = rig.config("ingest", kafka, registry, tableDir, FreePorts.next());
            System.out.printf(
                    "merge-worker instances: ingest alone for %d s (producer unthrottled, %d partitions, %d-byte payloads,"
                            + " %s), then the same backlog drained by %s merge-worker JVMs (-Xmx1g, default settings; %d"
                            + " partitions of the sealed topic)%s%n%n",
                    rig.seconds(),
                    rig.partitions(),
                    rig.payloadBytes(),
                    rig.tables() == 0 ? "one table" : rig.tables() + " tables",
                    java.util.Arrays.toString(instanceCounts),
                    Math.max(2, most),
                    pinCpus ? "; worker i pinned to CPU i (taskset): one CPU each" : "");
            long backlog;
            BitSet acked = new BitSet();
            AtomicLong produced = new AtomicLong();
            try (ChildJvm ingest = ChildJvm.start(
                    IngestApp.class, List.of(ingestConfig.toString()), Map.of(), dir.resolve("ingest.log"), "-Xmx1g")) {
                AtomicBoolean producing = new AtomicBoolean(true);
                Thread producer = new Thread(
                        () -> rig.produce(kafka, registry, producing, acked, produced), "instances-producer");
                producer.start();
                Thread.sleep(rig.seconds() * 1000L);
                producing.set(false);
                producer.join();
                try (SustainedTarget target = rig.target(tableDir, ingest, 0)) {
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
                        Path config = rig.config(
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
                    try (SustainedTarget target = rig.target(tableDir, workers.get(0), ports.get(0))) {
                        // the workers' /pending, not the tables: counting 100 bases would load the cores measured
                        long start = System.nanoTime();
                        int empty = 0;
                        boolean seen = false;
                        while (empty < 2 || !seen || target.baseRows() < backlog) {
                            requireAlive(workers);
                            Thread.sleep(250);
                            int pending = AppHttp.pendingTotal(ports);
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
                            ExactlyOnceAudit.verify(
                                    target, acked, produced.get(), rig.tables()); // every record once, in its own table
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

    private void requireAlive(List<ChildJvm> workers) {
        if (workers.stream().anyMatch(w -> !w.isAlive())) {
            throw new IllegalStateException("a merge-worker died; see " + rig.dir());
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
}
