package dev.rolloutingest.table;

import dev.rolloutingest.table.merge.MergeRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Map;

/**
 * A JVM of its own that runs a table's cycle (write, merge, read, GC) on Azure with an Entra ID bearer token as its
 * only credential, for lance-core and the project's files alike; its trust store is set on its command line. Prints
 * what it read; exits 1 on any failure.
 */
public final class AzureTableProbe {
    private AzureTableProbe() {}

    public static void main(String[] args) {
        Map<String, String> options = Map.of(
                "azure_storage_account_name",
                "devstoreaccount1",
                "azure_endpoint",
                args[0],
                "azure_storage_token",
                args[2],
                // lance-core's own TLS stack does not read the JVM's trust store
                "allow_invalid_certificates",
                "true");
        TableLocation location = new TableLocation(args[1], options);
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int g = 0; g < 3; g++) {
                TableFixtures.write(table, 0, g * 10L, g * 10L + 9, 15);
            }
            String shard = ShardId.of(TableFixtures.TOPIC, 0);
            while (table.merges().pass(MergeRequest.of(shard).limits(2, 0)).mergedAnything()) {
                // drain in bounded passes
            }
            Thread.sleep(50);
            int collected =
                    table.maintenance().collectGarbage(Duration.ofMillis(10)).deletedGenerations();
            System.out.println("probe rows " + table.countRows() + ", pending "
                    + table.generations().pending(shard).size() + ", collected " + collected);
        } catch (Exception e) {
            e.printStackTrace(System.out);
            System.exit(1);
        }
        System.exit(0);
    }
}
