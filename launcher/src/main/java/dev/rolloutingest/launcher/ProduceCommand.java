package dev.rolloutingest.launcher;

import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "produce",
        mixinStandardHelpOptions = true,
        description = "Publish generated rollouts (Avro, Confluent wire format, key = record_id) to any cluster.")
final class ProduceCommand implements Callable<Integer> {
    @Option(names = "--bootstrap-servers", required = true)
    String bootstrapServers;

    @Option(names = "--schema-registry-url", required = true, description = "Confluent-compatible registry base URL")
    String registryUrl;

    @Option(names = "--topic", defaultValue = "rollouts")
    String topic;

    @Option(names = "--count", defaultValue = "1000", description = "Records to publish (default ${DEFAULT-VALUE})")
    long count;

    @Option(names = "--keys", description = "Distinct record_ids (default: --count; fewer means rewrites)")
    Long keys;

    @Option(names = "--rate", defaultValue = "0", description = "Records per second, 0 = unthrottled")
    double rate;

    @Option(
            names = "--payload-bytes",
            defaultValue = "1024",
            description = "binary_payload size (default ${DEFAULT-VALUE})")
    int payloadBytes;

    @Option(names = "--experiment", defaultValue = "demo")
    String experiment;

    @Mixin
    KafkaClientOptions client;

    @Override
    public Integer call() throws Exception {
        AtomicLong acked = new AtomicLong();
        long started = System.nanoTime();
        new RolloutPublisher(client.clientConfig(bootstrapServers), registryUrl)
                .publish(topic, experiment, count, keys == null ? count : keys, payloadBytes, rate, acked);
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.printf(
                "published %d of %d rollouts to %s in %.1f s (%.0f/s)%n",
                acked.get(), count, topic, seconds, acked.get() / seconds);
        return acked.get() == count ? 0 : 1;
    }
}
