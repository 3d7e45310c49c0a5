package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.ConfigSources;
import java.util.HashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * The connection settings of a command's own Kafka clients: the brokers, then the same security settings the
 * apps use ({@code STREAMS_*} env vars such as {@code STREAMS_SECURITY_PROTOCOL}), then {@code --client-setting}.
 */
final class KafkaClientOptions {
    @Option(
            names = "--client-setting",
            paramLabel = "KEY=VALUE",
            description = "Kafka client setting for SASL/SSL"
                    + " clusters, repeatable (e.g. security.protocol=SASL_SSL); STREAMS_* env vars apply too")
    Map<String, String> settings = new HashMap<>();

    Map<String, Object> clientConfig(String bootstrapServers) {
        Map<String, Object> client = new HashMap<>(ConfigSources.streamsSettingsFromEnv(System.getenv()));
        client.putAll(settings);
        client.put("bootstrap.servers", bootstrapServers);
        return client;
    }
}
