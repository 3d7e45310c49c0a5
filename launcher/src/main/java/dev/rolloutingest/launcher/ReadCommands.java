package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** get and list: read a table directly (local or S3) and print JSON. */
final class ReadCommands {
    private ReadCommands() {}

    @Command(
            name = "get",
            mixinStandardHelpOptions = true,
            description = "Print one rollout as JSON (exit 3 if absent).")
    static final class Get implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Parameters(index = "0", description = "record_id")
        String recordId;

        @Option(names = "--snapshot", description = "Read this snapshot instead of the live table")
        String snapshot;

        @Override
        public Integer call() throws Exception {
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                var row = snapshot == null ? t.get(recordId) : t.get(recordId, snapshot);
                if (row.isEmpty()) {
                    System.err.println("no rollout with record_id " + recordId);
                    return 3;
                }
                System.out.println(
                        HttpEndpoint.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(RowJson.of(row.get())));
                return 0;
            } catch (TableSnapshots.SnapshotException e) {
                return SnapshotCommand.refused(e);
            }
        }
    }

    @Command(
            name = "list",
            mixinStandardHelpOptions = true,
            description = "Print a page of rollouts, one JSON object per line.")
    static final class List implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Option(names = "--experiment", description = "Only this experiment")
        String experiment;

        @Option(names = "--rollout-id", description = "Only this rollout_id")
        String rolloutId;

        @Option(names = "--limit", defaultValue = "100", description = "Page size (default ${DEFAULT-VALUE})")
        int limit;

        @Option(names = "--offset", defaultValue = "0", description = "Rows to skip (default ${DEFAULT-VALUE})")
        long offset;

        @Option(names = "--snapshot", description = "Read this snapshot instead of the live table")
        String snapshot;

        @Override
        public Integer call() throws Exception {
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                ListQuery query = new ListQuery(experiment, rolloutId, limit, offset, false);
                for (var row : snapshot == null ? t.list(query) : t.list(query, snapshot)) {
                    System.out.println(HttpEndpoint.JSON.writeValueAsString(RowJson.of(row)));
                }
                return 0;
            } catch (TableSnapshots.SnapshotException e) {
                return SnapshotCommand.refused(e);
            }
        }
    }
}
