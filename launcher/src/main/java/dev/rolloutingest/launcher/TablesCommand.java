package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.CommonKeys;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(
        name = "tables",
        mixinStandardHelpOptions = true,
        description = "List the tables under a root (" + CommonKeys.TABLES_ROOT + "): rows, base rows, pending"
                + " generations, the base's last commit and its data size")
final class TablesCommand implements Callable<Integer> {
    @Option(
            names = "--root",
            required = true,
            description =
                    "The root of the tables: a local path, s3://bucket/prefix, az://container/prefix or abfss://...")
    String root;

    @Option(names = "--storage", description = "Lance storage option, repeatable: aws_endpoint=http://...")
    Map<String, String> storage = new HashMap<>();

    @Option(names = "--json", description = "Print JSON instead of a table")
    boolean json;

    @Override
    public Integer call() throws Exception {
        try (TableCatalog tables = TableCatalog.under(
                TableOptions.location(root, storage), TableSettings.DEFAULTS, new SimpleMeterRegistry(), 100_000)) {
            List<Map<String, Object>> rows = TableSummaries.describeAll(tables);
            if (json) {
                System.out.println(
                        HttpEndpoint.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(rows));
                return 0;
            }
            System.out.printf(
                    "%-32s %12s %12s %8s %10s  %-24s %14s%n",
                    "table", "rows", "base_rows", "shards", "pending", "last_commit", "data_bytes");
            for (Map<String, Object> row : rows) {
                if (row.containsKey("error")) {
                    System.out.printf("%-32s %s%n", row.get("table"), row.get("error"));
                    continue;
                }
                System.out.printf(
                        "%-32s %12s %12s %8s %10s  %-24s %14s%n",
                        row.get("table"),
                        row.get("rows"),
                        row.get("base_rows"),
                        row.get("shards"),
                        row.get("pending_generations"),
                        row.get("last_commit"),
                        row.get("data_bytes"));
            }
            System.out.printf("%d table(s) under %s%n", rows.size(), tables.uri());
            return 0;
        }
    }
}
