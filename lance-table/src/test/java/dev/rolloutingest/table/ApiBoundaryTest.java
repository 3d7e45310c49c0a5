package dev.rolloutingest.table;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The walls of this module, read from the sources: the apps use only the table's API, and each package of the module
 * uses only the packages below it (package-info.java of {@code dev.rolloutingest.table} says why).
 */
class ApiBoundaryTest {
    /** What the apps may use of this module. */
    static final Set<String> API = Set.of(
            "RolloutTable",
            "TableLocation",
            "TableSettings",
            "ShardId",
            "RolloutTableException",
            "MemoryBudget", // the one memory budget the apps' bounds are uses of
            "TableGenerations", // table.generations(): writes, seals, watermarks, the backlog
            "ResidentMemory", // table.resident(): what a table keeps between uses
            "catalog.TableCatalog",
            "snapshots.TableSnapshots",
            "generations.SealedGeneration",
            "generations.GenerationBatch",
            "generations.PendingShard", // a shard's backlog as the table holds it
            "rows.RolloutRow",
            "rows.RolloutSchema",
            "rows.RowWriter", // RowWriter.Staged: what GenerationBatch.stage returns
            "rows.Tombstones",
            "rows.AddedColumns", // the dead-letter reason of a refused field
            "reads.ListQuery",
            "reads.ScanQuery", // bulk reads for training: the query, its answer and the tail's cursor
            "reads.RowStream",
            "reads.TailCursor",
            "reads.PartitionShare", // one of several data-parallel readers' shares of a read
            "merge.TableMerges", // the one way a table is merged: requests, their results
            "merge.MergeRequest",
            "merge.MergeResult",
            "merge.CommitStage",
            "merge.MergeMemory", // lance-core's merge pool, checked by the apps' configs
            "maintenance.TableMaintenance", // table.maintenance(): compaction, index upkeep, old deletes, GC
            "maintenance.KeyIndexTiers");

    /** The packages each package of the module may use besides its own and the table's values. */
    static final Map<String, Set<String>> MAY_USE = Map.of(
            "storage", Set.of(),
            "rows", Set.of("storage"),
            "generations", Set.of("rows", "storage"),
            "reads", Set.of("generations", "rows", "storage"),
            "merge", Set.of("generations", "rows", "storage"),
            "maintenance", Set.of("generations", "rows", "storage"),
            "snapshots", Set.of("merge", "generations", "rows", "storage"),
            "catalog", Set.of("generations", "merge", "storage")); // above the entry point: it opens RolloutTables

    private static final Pattern REFERENCE = Pattern.compile("dev\\.rolloutingest\\.table\\.((?:[a-z]+\\.)*[A-Z]\\w*)");

    @Test
    void theAppsUseOnlyTheTablesApi() throws IOException {
        List<String> outside = new ArrayList<>();
        for (String module : List.of("app-runtime", "ingest-topology", "merge-worker", "launcher")) {
            for (Path file : javaFiles(Path.of("..", module, "src", "main", "java"))) {
                Matcher m = REFERENCE.matcher(Files.readString(file));
                while (m.find()) {
                    if (!API.contains(m.group(1))) {
                        outside.add(file.getFileName() + " uses " + m.group(1));
                    }
                }
            }
        }
        assertThat(outside).as("references beyond the table's API").isEmpty();
    }

    @Test
    void eachPackageUsesOnlyThePackagesBelowIt() throws IOException {
        Path root = Path.of("src", "main", "java", "dev", "rolloutingest", "table");
        List<String> upward = new ArrayList<>();
        for (Map.Entry<String, Set<String>> rule : MAY_USE.entrySet()) {
            for (Path file : javaFiles(root.resolve(rule.getKey()))) {
                Matcher m = REFERENCE.matcher(Files.readString(file));
                while (m.find()) {
                    String used = m.group(1);
                    int dot = used.lastIndexOf('.');
                    String pkg = dot < 0 ? "" : used.substring(0, dot);
                    boolean allowed = pkg.equals(rule.getKey())
                            || rule.getValue().contains(pkg)
                            || pkg.isEmpty()
                                    && (!used.equals("RolloutTable")
                                            || rule.getKey().equals("catalog"));
                    if (!allowed) {
                        upward.add(rule.getKey() + "/" + file.getFileName() + " uses " + used);
                    }
                }
            }
        }
        assertThat(upward).as("uses of packages above").isEmpty();
    }

    private static List<Path> javaFiles(Path dir) throws IOException {
        assertThat(dir).as("a source folder of the build").isDirectory();
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(p -> p.toString().endsWith(".java")).toList();
        }
    }
}
