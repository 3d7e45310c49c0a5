package dev.rolloutingest.launcher;

import dev.rolloutingest.table.RolloutTable;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        description =
                "Per shard: pending generations and merged watermark; with --bootstrap-servers, consumer lag of both apps.")
final class StatusCommand implements Callable<Integer> {
    @Mixin
    TableOptions table;

    @Option(names = "--bootstrap-servers", description = "Also show consumer lag")
    String bootstrapServers;

    @Option(names = "--ingest-group", defaultValue = "rollout-ingest")
    String ingestGroup;

    @Option(
            names = "--input-topic",
            defaultValue = "rollouts",
            split = ",",
            description = "The input topics whose lag is shown, one block each (comma-separated)")
    java.util.List<String> inputTopics;

    @Option(names = "--merge-group", defaultValue = "rollout-merge")
    String mergeGroup;

    @Option(names = "--generations-topic", defaultValue = "rollout-generations")
    String generationsTopic;

    @Option(names = "--sealed-group", description = "Group of the sealed lag (default: <ingest-group>-sealed)")
    String sealedGroup;

    @Option(names = "--merged-group", description = "Group of the merged lag (default: <ingest-group>-merged)")
    String mergedGroup;

    @Mixin
    KafkaClientOptions client;

    @Override
    public Integer call() throws Exception {
        try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
            System.out.println(render(t));
        }
        if (bootstrapServers != null) {
            String sealed = sealedGroup != null ? sealedGroup : ingestGroup + "-sealed";
            String merged = mergedGroup != null ? mergedGroup : ingestGroup + "-merged";
            try (Admin admin = Admin.create(client.clientConfig(bootstrapServers))) {
                for (String inputTopic : inputTopics) {
                    System.out.println("lag (records) by partition of " + inputTopic + ":");
                    System.out.println(
                            "  processed  " + ingestGroup + ": " + ConsumerLag.of(admin, ingestGroup, inputTopic));
                    System.out.println("  sealed     " + sealed + ": " + ConsumerLag.of(admin, sealed, inputTopic)
                            + "   <- not yet in the tables (alert on this)");
                    System.out.println("  merged     " + merged + ": " + ConsumerLag.of(admin, merged, inputTopic)
                            + "   <- in pending generations, not yet in the bases");
                }
                System.out.println("lag of " + mergeGroup + " on " + generationsTopic + ": "
                        + ConsumerLag.of(admin, mergeGroup, generationsTopic));
            }
        }
        return 0;
    }

    static String render(RolloutTable t) {
        StringBuilder out = new StringBuilder("table " + t.location().uri() + "\n");
        out.append(String.format("  %-36s %8s %20s%n", "shard", "pending", "merged watermark"));
        Map<String, Long> watermarks = t.generations().watermarks();
        for (String shard : t.generations().shards()) {
            long watermark = watermarks.getOrDefault(shard, 0L);
            out.append(String.format(
                    "  %-36s %8d %20d%n", shard, t.generations().pendingCount(shard, watermark), watermark));
        }
        out.append("  base rows: ").append(t.countBaseRows());
        out.append(", deletes kept: ").append(t.countBaseDeletes());
        return out.toString();
    }
}
