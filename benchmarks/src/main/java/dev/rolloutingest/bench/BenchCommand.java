package dev.rolloutingest.bench;

import dev.rolloutingest.table.TableSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Measures costs on this machine and prints them as Markdown, one suite per run: the default, table ({@link
 * TableBench}), is generation writes, point lookups and scans against the number of pending generations, and one
 * bounded merge pass; every other suite is a class of its own. A harness, not a test: numbers are recorded in
 * docs/benchmarks.md with the command that produced them.
 *
 * <p>Over 300 lines because it holds every suite's options, as one command (the commands docs/benchmarks.md records).
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Measure generation writes, reads vs pending generations, and merge passes on a local table.")
final class BenchCommand implements Callable<Integer> {
    @Option(names = "--dir", defaultValue = "data/bench", description = "Scratch directory (emptied)")
    Path dir;

    @Option(names = "--repeat", defaultValue = "15", description = "Samples per measurement; the median is printed")
    int repeat;

    @picocli.CommandLine.Parameters(
            index = "0",
            defaultValue = "table",
            arity = "0..1",
            description = "What to measure: table (writes, reads, merges on one shard), reads (lookups against the"
                    + " backlog and shard count at --read-base-rows base sizes, merge passes and lists at both), merge (draining a"
                    + " backlog with 1, 2, 4 merge threads), merge-join (a merge commit's time and memory with the scan"
                    + " join and the index join against the base's size), merge-round (a round of 16,000 rows against the"
                    + " base's size: new keys appended, updates of keys merged in the last rounds, 1 %% and 50 %%"
                    + " present, 10 %% deletes, the join-only path, a plain Append as the floor; --round-base-rows, --commits rounds each), capacity (ingest alone for --seconds, then the"
                    + " merge-worker alone draining that backlog: merge / ingest), merge-instances (ingest alone for"
                    + " --seconds, then that backlog drained by --merge-instances merge-worker JVMs per run: rows/s"
                    + " against the first run), ingest (the topology against a plain consumer, a plain write and both"
                    + " pipelined; freshness), sustained (producer unthrottled, ingest and merge for --seconds: pending"
                    + " per shard, merge capacity / ingest, 0 lost / 0 duplicated), many-tables (the same rollouts into"
                    + " --tables tables: rows/s, generations per minute, rows per generation), scan (bulk reads for"
                    + " training of a --scan-base-rows base with --scan-pending-rows pending against a plain lance-core"
                    + " scan of the base with the same projection; a tail's seal-to-delivery lag at a steady producer"
                    + " for --tail-seconds), fleet-isolation (--isolation-tables tables on one merge fleet, --broken of"
                    + " them with their base's data deleted: the healthy tables' drain rows/s against the same run"
                    + " without the broken ones), fleet-spread (the same --generations x --rows spread over --tables"
                    + " tables, one merge fleet: merge rows/s per table count), resident-tables (a merge-worker that"
                    + " merged and read each of --tables tables once, then idles: RSS, heap, threads per count),"
                    + " fleet-fairness (--isolation-tables tables on one fleet for --seconds, one --hot-factor times"
                    + " hotter: every table's highest pending count against --merge-trigger), serve (--serve-clients"
                    + " concurrent scans of a --scan-base-rows table over HTTP and Arrow Flight from one and from two"
                    + " serve replicas, against as many plain lance-core scans; /health's slowest answer meanwhile),"
                    + " peer-iceberg (the same --records rollouts per --formats value format drained from a backlog"
                    + " by rollout-ingest and by Apache Iceberg's Kafka Connect sink in turn: rows/s end to end and"
                    + " from 10 %% to 90 %%, first and all rows readable, all merged, CPU seconds, peak RSS, table"
                    + " bytes, lost and duplicated), file-versions (one generation's rows written by lance-core in"
                    + " each of --file-versions and read back: write, full scan and one-row take times)")
    String suite;

    @Option(
            names = "--file-versions",
            split = ",",
            defaultValue = "default,2.0,2.1",
            description = "file-versions: the Lance file format versions compared (default = lance-core's own)")
    List<String> fileVersions;

    @Option(
            names = "--tables",
            split = ",",
            defaultValue = "1,10,100",
            description = "many-tables, fleet-spread, resident-tables: the table counts, side by side (the first is the"
                    + " baseline)")
    int[] tableCounts;

    @Option(
            names = "--many-tables-seal-rows",
            defaultValue = "10000",
            description = "many-tables: rollout.seal.max.rows of the ingest app")
    int manyTablesSealRows;

    @Option(
            names = "--isolation-tables",
            defaultValue = "50",
            description = "fleet-isolation: tables, broken ones included")
    int isolationTables;

    @Option(
            names = "--hot-factor",
            defaultValue = "10",
            description = "fleet-fairness: the hot table's rate over a cold one's")
    int hotFactor;

    @Option(
            names = "--cold-per-second",
            defaultValue = "1",
            description = "fleet-fairness: generations per second written to each cold table")
    int coldPerSecond;

    @Option(
            names = "--merge-trigger",
            defaultValue = "4",
            description = "fleet-fairness: pending generations at which a table's merge is asked for")
    int mergeTrigger;

    @Option(names = "--broken", defaultValue = "5", description = "fleet-isolation: tables broken by hand")
    int broken;

    @Option(
            names = "--resident-heap",
            defaultValue = "4g",
            description = "resident-tables: the worker JVM's fixed heap (-Xms = -Xmx, pre-touched)")
    String residentHeap;

    @Option(
            names = "--idle-release-ms",
            defaultValue = "5000",
            description = "resident-tables: rollout.tables.idle.release.ms of the worker (it idles 20 s)")
    long idleReleaseMs;

    @Option(
            names = "--tables-parallel",
            defaultValue = "4",
            description = "fleet-isolation: rollout.merge.tables.parallel of the fleet")
    int tablesParallel;

    @Option(names = "--lookups", defaultValue = "500", description = "reads: lookups per measurement")
    int lookups;

    @Option(
            names = "--read-base-rows",
            defaultValue = "10000,1000000",
            split = ",",
            description = "reads: base sizes (on S3: 10,000 only)")
    long[] readBaseRows;

    @Option(names = "--s3", description = "reads: on the embedded S3 API, counting object-store operations per lookup")
    boolean s3;

    @Option(names = "--shards", defaultValue = "8", description = "merge: shards of the backlog")
    int shards;

    @Option(names = "--generations", defaultValue = "16", description = "merge: generations per shard")
    int generations;

    @Option(names = "--rows", defaultValue = "1000", description = "merge: rows per generation")
    int rows;

    @Option(names = "--threads", defaultValue = "1,2,4", split = ",", description = "merge: merge threads to compare")
    int[] threads;

    @Option(
            names = "--instances",
            defaultValue = "2",
            description = "merge: committers on one table to compare with one")
    int instances;

    @Option(
            names = "--scan-join-max-base-rows",
            defaultValue = "2000000",
            description = "merge: rollout.merge.scan.join.max.base.rows of the drains (0 = always the index join)")
    long scanJoinMaxBaseRows;

    @Option(
            names = "--records",
            description = "ingest, many-tables: rollouts preloaded (default 300,000); peer-iceberg: rollouts per value"
                    + " format (default 500,000)")
    Integer records;

    /** --records, or the suite's default. */
    private int records(int suiteDefault) {
        return records == null ? suiteDefault : records;
    }

    @Option(
            names = "--formats",
            split = ",",
            defaultValue = "json,avro",
            description = "peer-iceberg: value formats, each its own topic and run (json: both systems; avro:"
                    + " rollout-ingest alone, the sink's AvroConverter is not served)")
    List<String> peerFormats = new ArrayList<>();

    @Option(
            names = "--partitions",
            defaultValue = "4",
            description = "ingest, peer-iceberg: partitions of the input topic")
    int partitions;

    @Option(
            names = "--payload-bytes",
            defaultValue = "1024",
            description = "ingest, merge-round, scan, peer-iceberg: payload of each rollout")
    int payloadBytes;

    @Option(
            names = "--fresh-rate",
            defaultValue = "5000",
            description = "ingest: records/s of the freshness run (0 = skip)")
    double freshRate;

    @Option(
            names = "--set",
            description = "ingest, peer-iceberg: a setting for the ingest app, repeatable: rollout.stream.threads=1")
    Map<String, String> topologySettings = new HashMap<>();

    @Option(
            names = "--merge-set",
            description = "peer-iceberg: a setting for the merge-worker, repeatable: rollout.merge.adopt.min.rows=0")
    Map<String, String> mergeSettings = new HashMap<>();

    @Option(
            names = "--processes",
            defaultValue = "1",
            description = "peer-iceberg: rollout-ingest as 1 process (the ingest app and the merge-worker in one JVM,"
                    + " `rollout-ingest pipeline`) or 2 (each in its own)")
    int peerProcesses;

    @Option(names = "--no-limits", description = "ingest: measure the topology only, not (a)-(c)")
    boolean noLimits;

    @Option(
            names = "--value-formats",
            split = ",",
            description = "ingest: instead of (a)-(d), the same rollouts as values of these formats side by side"
                    + " (avro,json,json-schema,protobuf): one thread's decode into a batch, and the topology unless"
                    + " --no-topology, each against avro's")
    List<String> valueFormats = new ArrayList<>();

    @Option(names = "--no-topology", description = "ingest --value-formats: the decode only, not the topology")
    boolean noTopology;

    @Option(names = "--fresh-seconds", defaultValue = "20", description = "ingest: length of the freshness run")
    int freshSeconds;

    @Option(
            names = "--rss-backlogs",
            defaultValue = "10,400",
            split = ",",
            description =
                    "merge: backlogs (generations of one shard) whose drain's peak RSS is compared; empty to skip")
    int[] rssBacklogs;

    @Option(
            names = "--merge-instances",
            split = ",",
            defaultValue = "1,2,1",
            description = "merge-instances: merge-worker JVMs of each run, in order")
    List<Integer> mergeInstances;

    @Option(
            names = "--pin-cpus",
            description = "merge-instances: run worker i on CPU i alone (taskset), as if each had a machine of one CPU")
    boolean pinCpus;

    @Option(
            names = "--rescore-after-ms",
            defaultValue = "0",
            description =
                    "sustained: every rollout sent again this much later with another reward, an update of its row"
                            + " (0 = new keys only)")
    long rescoreAfterMs;

    @Option(names = "--seconds", defaultValue = "300", description = "sustained: length of the run")
    int seconds;

    @Option(
            names = "--sustained-tables",
            defaultValue = "0",
            description = "sustained: records of this many experiments, each routed to its own table (0 = one table)")
    int sustainedTables;

    @Option(
            names = "--base-rows",
            defaultValue = "1000000,2000000,5000000",
            split = ",",
            description = "merge-join: base sizes")
    long[] baseRows;

    @Option(names = "--source-rows", defaultValue = "60000", description = "merge-join: rows per commit")
    int sourceRows;

    @Option(
            names = "--commits",
            defaultValue = "3",
            description = "merge-join: commits per join, base and source; merge-round: timed rounds per case")
    int commits;

    @Option(
            names = "--round-base-rows",
            defaultValue = "100000,1000000,10000000",
            split = ",",
            description = "merge-round: base sizes")
    long[] roundBaseRows;

    @Option(
            names = "--key-addresses-bytes",
            defaultValue = "-1",
            description = "merge-round: the committer's book of the newest keys' addresses"
                    + " (rollout.merge.key.addresses.bytes; -1 = its default, 0 = every update through the index)")
    long keyAddressesBytes;

    @Option(
            names = "--key-addresses-file-max-bytes",
            defaultValue = "-1",
            description = "merge-round: the largest file of every base key's address"
                    + " (rollout.merge.key.addresses.file.max.bytes; -1 = its default, 0 = no file)")
    long keyAddressesFileMaxBytes;

    @Option(
            names = "--base-payload-bytes",
            defaultValue = "-1",
            description = "merge-round: payload of each base row (-1 = --payload-bytes; the rounds' rows and their"
                    + " floor keep --payload-bytes)")
    int basePayloadBytes;

    @Option(
            names = "--keep-base",
            description = "merge-round: keep each base under --dir (round-base-<rows>) and use it again in the next run"
                    + " instead of writing it anew (its rounds' new keys drawn afresh each run)")
    boolean keepBase;

    @Option(
            names = "--compact-kept-base",
            description = "merge-round: compact a kept base before its rounds, as the merge-worker's upkeep does"
                    + " (compaction, then the key index rebuilt)")
    boolean compactKeptBase;

    @Option(
            names = "--cases",
            defaultValue = "new,recent,old-1,old-50,deletes",
            split = ",",
            description =
                    "merge-round: the cases run: new (new keys), recent (updates of keys merged in the last"
                            + " rounds), old-1 and old-50 (1 %% and 50 %% updates of random base keys), deletes (10 %% deletes)")
    java.util.List<String> roundCases;

    @Option(
            names = "--base-rows-per-fragment",
            defaultValue = "1000000",
            description = "merge-round: rows of each fragment of the base (the merge-worker's compaction target,"
                    + " rollout.compaction.target.rows.per.fragment, by default; runs before 2026-12-06 evening wrote"
                    + " 250000)")
    int baseRowsPerFragment;

    @Option(names = "--scan-base-rows", defaultValue = "1000000", description = "scan: rows of the base")
    long scanBaseRows;

    @Option(names = "--scan-pending-rows", defaultValue = "10000", description = "scan: pending rows (updates)")
    int scanPendingRows;

    @Option(names = "--tail-seconds", defaultValue = "20", description = "scan: length of the tail lag run")
    int tailSeconds;

    @Option(
            names = "--serve-clients",
            defaultValue = "1,8,32",
            split = ",",
            description = "serve: concurrent scans, one row each")
    int[] serveClients;

    @Option(
            names = "--serve-defaults",
            description = "serve: replicas with their default limits (2 scans per table, 8 data threads), not as many"
                    + " as the most clients: what a client past them gets is a retry")
    boolean serveDefaults;

    @Option(
            names = "--launcher-jar",
            defaultValue = "launcher/target/rollout-ingest.jar",
            description = "serve: the launcher jar its serve replicas run")
    Path launcherJar;

    /** The machine line every suite starts with, so a figure is read against what it ran on. */
    private static void printMachine(String after) {
        System.out.printf(
                "machine: %d cores, java %s, max heap %d MiB%n" + after,
                Runtime.getRuntime().availableProcessors(),
                System.getProperty("java.version"),
                Runtime.getRuntime().maxMemory() >> 20);
    }

    @Override
    public Integer call() throws Exception {
        if (suite.equals("merge-join")) {
            printMachine("%n");
            new MergeJoinBench(System.out).run(dir, baseRows, sourceRows, commits);
            return 0;
        }
        if (suite.equals("many-tables")) {
            printMachine("%n");
            new ManyTablesBench(dir, records(300_000), partitions, payloadBytes, tableCounts, manyTablesSealRows).run();
            return 0;
        }
        if (suite.equals("merge-round")) {
            printMachine("%n");
            new MergeRoundBench(
                            System.out,
                            payloadBytes,
                            basePayloadBytes < 0 ? payloadBytes : basePayloadBytes,
                            keyAddressesBytes < 0 ? TableSettings.DEFAULTS.mergeKeyAddressesBytes() : keyAddressesBytes,
                            keyAddressesFileMaxBytes < 0
                                    ? TableSettings.DEFAULTS.mergeKeyAddressesFileMaxBytes()
                                    : keyAddressesFileMaxBytes,
                            keepBase,
                            compactKeptBase,
                            new java.util.LinkedHashSet<>(roundCases),
                            baseRowsPerFragment)
                    .run(dir, roundBaseRows, commits);
            return 0;
        }
        if (suite.equals("capacity") || suite.equals("sustained") || suite.equals("merge-instances")) {
            // the apps run in JVMs of their own: this JVM's heap says nothing about them
            System.out.printf(
                    "machine: %d cores, java %s%n",
                    Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));
            SustainedRig rig = SustainedRig.under(dir, seconds, partitions, payloadBytes, sustainedTables);
            if (suite.equals("capacity")) {
                new CapacityBench(rig).run();
            } else if (suite.equals("merge-instances")) {
                new MergeInstancesBench(rig)
                        .run(mergeInstances.stream().mapToInt(Integer::intValue).toArray(), pinCpus);
            } else {
                new SustainedBench(rig, rescoreAfterMs).run();
            }
            return 0;
        }
        if (suite.equals("ingest") && !valueFormats.isEmpty()) {
            printMachine("");
            new ValueFormatBench(
                            dir,
                            records(300_000),
                            partitions,
                            payloadBytes,
                            valueFormats.stream()
                                    .map(dev.rolloutingest.serde.values.ValueFormat::of)
                                    .toList(),
                            !noTopology)
                    .run();
            return 0;
        }
        if (suite.equals("ingest")) {
            printMachine("");
            new IngestBench(
                            dir,
                            records(300_000),
                            partitions,
                            payloadBytes,
                            freshRate,
                            freshSeconds,
                            topologySettings,
                            !noLimits)
                    .run();
            return 0;
        }
        if (suite.equals("file-versions")) {
            new FileVersionBench(dir, repeat, payloadBytes, fileVersions).run();
            return 0;
        }
        if (suite.equals("peer-iceberg")) {
            // the systems run in JVMs of their own: this JVM's heap says nothing about them
            System.out.printf(
                    "machine: %d cores, java %s%n",
                    Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));
            new PeerIcebergBench(
                            dir,
                            records(500_000),
                            partitions,
                            payloadBytes,
                            peerFormats.stream()
                                    .map(dev.rolloutingest.serde.values.ValueFormat::of)
                                    .toList(),
                            topologySettings,
                            mergeSettings,
                            peerProcesses)
                    .run();
            return 0;
        }
        if (suite.equals("fleet-isolation")) {
            printMachine("");
            new FleetIsolationBench(dir, isolationTables, broken, generations, rows, tablesParallel, 2).run();
            return 0;
        }
        if (suite.equals("fleet-fairness")) {
            printMachine("");
            new FleetFairnessBench(
                            dir,
                            isolationTables,
                            hotFactor,
                            seconds,
                            rows,
                            mergeTrigger,
                            coldPerSecond,
                            tablesParallel,
                            2)
                    .run();
            return 0;
        }
        if (suite.equals("resident-tables")) {
            printMachine("");
            new ResidentTablesBench(dir, tableCounts, residentHeap, idleReleaseMs).run();
            return 0;
        }
        if (suite.equals("fleet-spread")) {
            printMachine("");
            new FleetSpreadBench(dir, tableCounts, generations, rows, tablesParallel, 2).run();
            return 0;
        }
        if (suite.equals("merge")) {
            printMachine("");
            MergeBench bench = new MergeBench(dir, shards, generations, rows, threads, instances, scanJoinMaxBaseRows);
            bench.run();
            if (rssBacklogs.length > 0) {
                bench.rssByBacklog(rssBacklogs);
            }
            return 0;
        }
        if (suite.equals("scan")) {
            printMachine("%n");
            new ScanBench(dir, scanBaseRows, scanPendingRows, Math.min(repeat, 5), payloadBytes, tailSeconds).run();
            return 0;
        }
        if (suite.equals("serve")) {
            printMachine("%n");
            new ServeBench(dir, scanBaseRows, scanPendingRows, serveClients, launcherJar, serveDefaults).run();
            return 0;
        }
        if (suite.equals("reads")) {
            printMachine("%n");
            new ReadBench(dir, lookups, readBaseRows, s3).run();
            return 0;
        }
        if (!suite.equals("table")) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this), "unknown suite " + suite);
        }
        printMachine("%n");
        new TableBench(dir, repeat).run();
        return 0;
    }
}
