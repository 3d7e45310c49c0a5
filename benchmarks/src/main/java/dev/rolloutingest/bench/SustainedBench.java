package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.merge.MergeApp;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The sustained run: an unthrottled producer, the ingest app and the merge-worker (each in its own JVM,
 * default settings) on the embedded services for a fixed time. Every second it samples each shard's pending
 * generations; at the end it drains, then checks every produced record is in the base exactly once. Merge
 * capacity is the rows merged per second of merge work (round prepare + commit time, from the merge-worker's
 * /metrics), against the rows ingest sealed per second of wall time in the same run. The capacity and
 * merge-instances suites share its setup ({@link SustainedRig}) as runs of their own ({@link CapacityBench}, {@link
 * MergeInstancesBench}).
 */
final class SustainedBench {
    private final SustainedRig rig;
    private final long rescoreAfterMs;

    /** @param rescoreAfterMs each rollout sent again this much later with another reward (0 = new keys only) */
    SustainedBench(SustainedRig rig, long rescoreAfterMs) {
        this.rig = rig;
        this.rescoreAfterMs = rescoreAfterMs;
    }

    void run() throws Exception {
        Path dir = rig.dir();
        FileTrees.deleteRecursively(dir);
        Path tableDir = dir.resolve("table");
        try (EmbeddedKafka kafka = EmbeddedKafka.start(dir.resolve("kafka"));
                ApicurioRegistry registry = ApicurioRegistry.start(dir.resolve("registry"), Duration.ofSeconds(120))) {
            rig.createTopics(kafka);
            int mergePort = FreePorts.next();
            Path ingestConfig = rig.config("ingest", kafka, registry, tableDir, FreePorts.next());
            Path mergeConfig = rig.config("merge", kafka, registry, tableDir, mergePort);
            int countTrigger = 8; // rollout.merge.after.generations, default
            System.out.printf(
                    "sustained run: %d s, producer unthrottled%s, %d partitions, %d-byte payloads, %s, ingest and"
                            + " merge-worker in their own JVMs (-Xmx1g) with default settings%n%n",
                    rig.seconds(),
                    rescoreAfterMs > 0
                            ? ", every rollout sent twice (again " + rescoreAfterMs + " ms later, another reward)"
                            : "",
                    rig.partitions(),
                    rig.payloadBytes(),
                    rig.tables() == 0
                            ? "one table"
                            : rig.tables()
                                    + " tables (rollout.table.route ${experiment}, records of every table in every"
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
                Thread producer = new Thread(
                        () -> rig.produce(kafka, registry, producing, acked, produced, rescoreAfterMs),
                        "sustained-producer");
                SustainedTarget table = rig.target(tableDir, ingest, mergePort);
                try {
                    double busyAtStart = AppHttp.awaitMergeMetrics(mergePort, merge);
                    long start = System.nanoTime();
                    producer.start();
                    int maxPending = 0;
                    String maxPendingShard = "";
                    int maxPendingAt = 0;
                    long sealedAtStart = table.sealed();
                    double foldedAtStart = AppHttp.mergedRows(mergePort);
                    long pendingAtStart = table.pendingRecords();
                    long baseAtStart = table.baseRows();
                    try (Writer samples = Files.newBufferedWriter(dir.resolve("pending.tsv"), StandardCharsets.UTF_8)) {
                        samples.write("t\tpending_per_shard\n");
                        System.out.println(
                                "| t | produced | sealed | in base | pending generations, max over shards |");
                        System.out.println("|---|---|---|---|---|");
                        for (int t = 1; t <= rig.seconds(); t++) {
                            long due = start + t * 1_000_000_000L;
                            long wait = due - System.nanoTime();
                            if (wait > 0) {
                                Thread.sleep(wait / 1_000_000);
                            }
                            SustainedTarget.Worst worst = table.worst();
                            if (worst.pending() > maxPending) {
                                maxPending = worst.pending();
                                maxPendingShard = worst.where();
                                maxPendingAt = t;
                            }
                            samples.write(t + "\t" + worst.perShard() + "\n");
                            samples.flush();
                            if (t % 15 == 0 || t == rig.seconds()) {
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
                    double busy = AppHttp.mergeBusySeconds(mergePort) - busyAtStart;
                    double folded = AppHttp.mergedRows(mergePort) - foldedAtStart;
                    long pendingAtEnd = table.pendingRecords();
                    // records whose generations were merged in the run (a rescored record's two rows both count,
                    // also when one round folded both and only the newer reached the commit)
                    long mergedRecords = pendingAtEnd < 0 ? -1 : sealedInRun - (pendingAtEnd - pendingAtStart);
                    producing.set(false);
                    producer.join();
                    double ingestRate = sealedInRun / wall;
                    double mergeCapacity = folded / busy;
                    System.out.printf(
                            "%npending generations per shard%s, sampled every second: max %d (%s at %d s); count trigger"
                                    + " %d, bound 2x = %d: %s%n",
                            rig.tables() == 0 ? "" : " of every table",
                            maxPending,
                            maxPendingShard,
                            maxPendingAt,
                            countTrigger,
                            2 * countTrigger,
                            maxPending <= 2 * countTrigger ? "within" : "EXCEEDED");
                    System.out.printf(
                            "ingest: %,.0f rows/s sealed (wall time); merge: %,.0f rows reached a commit = %,.0f rows/s"
                                    + " (wall time; %,d new in the base), in %.1f s of round work = %,.0f rows/s capacity; merge"
                                    + " capacity / ingest = %.2f%n",
                            ingestRate,
                            folded,
                            folded / wall,
                            mergedInRun,
                            busy,
                            mergeCapacity,
                            mergeCapacity / ingestRate);
                    if (mergedRecords >= 0) {
                        System.out.printf(
                                "merged: %,d records of the run's generations = %,.0f records/s (wall time)%n",
                                mergedRecords, mergedRecords / wall);
                    }
                    System.out.printf(
                            "peak RSS: ingest %d MiB, merge-worker %d MiB%n",
                            ProcessMemory.hwmMiB(ingest.pid()), ProcessMemory.hwmMiB(merge.pid()));
                    ExactlyOnceAudit.verify(table, acked, produced.get(), rig.tables());
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
        Path kept = rig.dir().resolveSibling("sustained-logs");
        FileTrees.deleteRecursively(kept);
        Files.createDirectories(kept);
        for (String name : List.of("ingest.log", "merge.log", "pending.tsv")) {
            Path from = rig.dir().resolve(name);
            if (Files.exists(from)) {
                Files.copy(from, kept.resolve(name));
            }
        }
        System.out.println("logs and per-second samples kept in " + kept);
    }
}
