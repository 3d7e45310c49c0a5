package dev.rolloutingest.launcher;

import dev.rolloutingest.table.RolloutTable;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Per shard: pending generations and merged watermark; with --bootstrap-servers, consumer lag of both apps.")
final class StatusCommand implements Callable<Integer> {
    @Mixin
    TableOptions table;

    @Option(names = "--bootstrap-servers", description = "Also show consumer lag")
    String bootstrapServers;

    @Option(names = "--ingest-group", defaultValue = "rollout-ingest")
    String ingestGroup;

    @Option(names = "--input-topic", defaultValue = "rollouts")
    String inputTopic;

    @Option(names = "--merge-group", defaultValue = "rollout-merge")
    String mergeGroup;

    @Option(names = "--generations-topic", defaultValue = "rollout-generations")
    String generationsTopic;

    @Override
    public Integer call() throws Exception {
        try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
            System.out.println(render(t));
        }
        if (bootstrapServers != null) {
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
                System.out.println("consumer lag (records) by partition:");
                System.out.println("  " + ingestGroup + " on " + inputTopic + ": " + ConsumerLag.of(admin, ingestGroup, inputTopic));
                System.out.println("  " + mergeGroup + " on " + generationsTopic + ": "
                        + ConsumerLag.of(admin, mergeGroup, generationsTopic));
            }
        }
        return 0;
    }

    static String render(RolloutTable t) {
        StringBuilder out = new StringBuilder("table " + t.location().uri() + "\n");
        out.append(String.format("  %-36s %8s %20s%n", "shard", "pending", "merged watermark"));
        Map<String, Long> watermarks = t.watermarks();
        for (String shard : t.shards()) {
            long watermark = watermarks.getOrDefault(shard, 0L);
            out.append(String.format("  %-36s %8d %20d%n", shard, t.pendingCount(shard, watermark), watermark));
        }
        out.append("  base rows: ").append(t.countBaseRows());
        return out.toString();
    }
}
