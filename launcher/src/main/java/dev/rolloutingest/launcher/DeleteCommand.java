package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.producer.RecordMetadata;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Publishes tombstones for record_ids; with --table, waits until reads no longer return them. Exit 5: not yet. */
@Command(
        name = "delete",
        mixinStandardHelpOptions = true,
        description = "Delete rollouts by record_id: a tombstone (key, no value) to the input topic for each, which"
                + " ingest seals and the merge applies. With --table, waits until reads no longer return them.")
final class DeleteCommand implements Callable<Integer> {
    static final int NOT_YET_VISIBLE = 5;

    @Parameters(arity = "1..*", description = "record_ids to delete")
    List<String> recordIds;

    @Option(names = "--bootstrap-servers", required = true, description = "Kafka brokers")
    String bootstrapServers;

    @Option(
            names = "--topic",
            descriptionKey = IngestConfig.INPUT_TOPIC,
            description = "The input topic (default ${DEFAULT-VALUE}; setting " + IngestConfig.INPUT_TOPIC + ")")
    String topic;

    @Mixin
    KafkaClientOptions kafka;

    @Option(
            names = "--table",
            description = "The table: wait until its reads no longer return the deleted ids (its URI, or its name"
                    + " under --root)")
    String table;

    @Option(
            names = "--root",
            description = "The root of many tables: --table names the table the deletes are for (required then)")
    String root;

    @Option(names = "--storage", description = "Lance storage option of --table, repeatable")
    java.util.Map<String, String> storage = new java.util.HashMap<>();

    @Option(
            names = "--wait-ms",
            defaultValue = "60000",
            description = "How long to wait for the deletes to be visible (default ${DEFAULT-VALUE})")
    long waitMs;

    @Override
    public Integer call() throws Exception {
        if (root != null && table == null) {
            System.err.println("delete: with --root, --table names the table the deletes are for");
            return 2;
        }
        try (Deletes deletes = new Deletes(kafka.clientConfig(bootstrapServers), topic)) {
            for (String id : recordIds) {
                RecordMetadata at = deletes.publish(id, root == null ? null : table);
                System.err.printf("delete of %s published to %s-%d@%d%n", id, topic, at.partition(), at.offset());
            }
        } catch (IllegalArgumentException e) {
            System.err.println("delete: " + e.getMessage());
            return 2;
        }
        if (table == null) {
            return 0;
        }
        String uri = root == null ? table : TableOptions.location(root, storage).resolve(table);
        try (RolloutTable t = RolloutTable.open(
                TableOptions.location(uri, storage), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (String id : recordIds) {
                if (!Deletes.awaitGone(t, id, Duration.ofMillis(waitMs))) {
                    System.err.println("delete of " + id + " not yet visible after " + waitMs + " ms (not sealed yet)");
                    return NOT_YET_VISIBLE;
                }
                System.err.println("delete of " + id + " visible: reads no longer return it");
            }
        }
        return 0;
    }
}
