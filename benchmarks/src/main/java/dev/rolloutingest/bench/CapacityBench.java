package dev.rolloutingest.bench;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.table.RolloutTable;
import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The capacity suite, each side alone in one run: the ingest app with an unthrottled producer for {@code seconds} and
 * no merge-worker (rows sealed per second of wall time); then, the producer stopped and everything sealed, the
 * merge-worker alone draining that backlog (rows merged per second of wall time, from its first merge to an
 * empty backlog). Their ratio is what merge can fold per row ingest can seal.
 */
final class CapacityBench {
    private final SustainedRig rig;

    CapacityBench(SustainedRig rig) {
        this.rig = rig;
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
            System.out.printf(
                    "capacity alone: ingest for %d s (producer unthrottled, %d partitions, %d-byte payloads, no"
                            + " merge-worker), then the merge-worker alone drains the backlog; apps in their own JVMs"
                            + " (-Xmx1g), default settings%n",
                    rig.seconds(), rig.partitions(), rig.payloadBytes());
            try (ChildJvm ingest = ChildJvm.start(
                    IngestApp.class, List.of(ingestConfig.toString()), Map.of(), dir.resolve("ingest.log"), "-Xmx1g")) {
                BitSet acked = new BitSet();
                AtomicLong produced = new AtomicLong();
                AtomicBoolean producing = new AtomicBoolean(true);
                Thread producer =
                        new Thread(() -> rig.produce(kafka, registry, producing, acked, produced), "capacity-producer");
                RolloutTable table = rig.awaitTable(tableDir, ingest);
                try {
                    long sealedAtStart = OneTableTarget.sealed(table);
                    long start = System.nanoTime();
                    producer.start();
                    Thread.sleep(rig.seconds() * 1000L);
                    long sealedInRun = OneTableTarget.sealed(table) - sealedAtStart;
                    double ingestRate = sealedInRun / ((System.nanoTime() - start) / 1e9);
                    producing.set(false);
                    producer.join();
                    long deadline = System.nanoTime() + 300_000_000_000L;
                    while (OneTableTarget.sealed(table) < acked.cardinality() && System.nanoTime() < deadline) {
                        Thread.sleep(500);
                    }
                    long backlog = OneTableTarget.sealed(table);
                    int pending = 0;
                    Map<String, Long> watermarks = table.generations().watermarks();
                    for (String shard : table.generations().shards()) {
                        pending += table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
                    }
                    System.out.printf(
                            "ingest alone: %,d rows sealed in %d s = %,.0f rows/s; backlog %,d rows in %d generations%n",
                            sealedInRun, rig.seconds(), ingestRate, backlog, pending);
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
                        ExactlyOnceAudit.verify(
                                new OneTableTarget(table, tableDir, rig.partitions()),
                                acked,
                                produced.get(),
                                rig.tables());
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
}
