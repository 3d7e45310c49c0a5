package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.GenerationRepair;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Rebuilds a pending generation whose files were lost, from the input topic, under its existing seal: the
 * repair for "generation N cannot be read" (reads needing it fail, its shard's merges cool down). Dry run
 * unless --execute. The offsets must still be in the topic.
 */
@Command(
        name = "repair-generation",
        mixinStandardHelpOptions = true,
        description = "Write a pending generation whose files are gone again from its offsets in the input topic"
                + " (dry run unless --execute).")
final class RepairCommand implements Callable<Integer> {
    @Parameters(
            index = "0",
            description = "The ingest app's properties file (brokers, registry, table; env vars apply)")
    Path config;

    @Option(names = "--shard", required = true, description = "The shard id, as the error names it")
    String shard;

    @Option(names = "--generation", required = true, description = "The generation number, as the error names it")
    long generation;

    @Option(names = "--execute", description = "Write it (without it, only print what would be re-read)")
    boolean execute;

    @Option(
            names = "--table",
            description = "The table's name, when the config serves many tables (rollout.tables.root)")
    String tableName;

    @Override
    public Integer call() {
        IngestConfig ingest = IngestConfig.load(ConfigSources.file(config), System.getenv());
        if (ingest.manyTables() && tableName == null) {
            System.err.println("repair: the config serves many tables: name one with --table");
            return 2;
        }
        String name = ingest.manyTables() ? tableName : TableCatalog.SINGLE;
        try (TableCatalog tables = ingest.manyTables()
                ? TableCatalog.under(
                        ingest.tableLocation(), ingest.tableSettings(), new SimpleMeterRegistry(), ingest.tablesMax())
                : TableCatalog.single(
                        RolloutTable.open(ingest.tableLocation(), ingest.tableSettings(), new SimpleMeterRegistry()))) {
            RolloutTable table = tables.require(name);
            SealedGeneration seal = table.generations().pending(ShardId.requireValid(shard)).stream()
                    .filter(g -> g.generation() == generation)
                    .findFirst()
                    .orElse(null);
            if (seal == null) {
                System.err.printf(
                        "shard %s has no pending generation %d (merged already, or never sealed)%n", shard, generation);
                return 2;
            }
            System.out.printf(
                    "generation %d of shard %s: %s partition %d offsets [%d, %d], %d rows (%d dead-lettered at"
                            + " seal time, left out)%n",
                    generation,
                    shard,
                    seal.topic(),
                    seal.partition(),
                    seal.firstOffset(),
                    seal.lastOffset(),
                    seal.rows(),
                    seal.deadLettered().size());
            if (!execute) {
                System.out.println("dry run: add --execute to re-read these offsets and write the generation again");
                return 0;
            }
            int rows = new GenerationRepair(ingest, tables, name).repair(seal);
            System.out.printf(
                    "written again: %d rows; its shard merges at the next trigger (or POST /merge/%s)%n", rows, shard);
            return 0;
        }
    }
}
