package org.apache.kafka.tools.consumer.group;

import java.util.Map;
import java.util.TreeMap;

/**
 * Kafka's own ConsumerGroupCommand (what `kafka-consumer-groups --describe --group` runs), read as data:
 * per partition of a group, the lag the tool prints (-1 where it prints "-": no committed offset).
 * It lives in the tool's package because the structured result is package-private there.
 */
public final class LagProbe {
    private LagProbe() {}

    public static Map<Integer, Long> lagByPartition(String bootstrapServers, String group, String topic)
            throws Exception {
        ConsumerGroupCommandOptions options = ConsumerGroupCommandOptions.fromArgs(
                new String[] {"--bootstrap-server", bootstrapServers, "--describe", "--group", group});
        Map<Integer, Long> lags = new TreeMap<>();
        try (ConsumerGroupCommand.ConsumerGroupService service =
                new ConsumerGroupCommand.ConsumerGroupService(options, Map.of())) {
            service.collectGroupOffsets(group)
                    .getValue()
                    .ifPresent(states -> states.forEach(state -> {
                        if (state.topic().map(topic::equals).orElse(false)) {
                            lags.put(
                                    state.partition().orElseThrow(), state.lag().orElse(-1L));
                        }
                    }));
        }
        return lags;
    }

    /** The sum over the topic's partitions; -1 when some partition has no committed offset. */
    public static long totalLag(String bootstrapServers, String group, String topic, int partitions) throws Exception {
        Map<Integer, Long> lags = lagByPartition(bootstrapServers, group, topic);
        long total = 0;
        for (int p = 0; p < partitions; p++) {
            Long lag = lags.get(p);
            if (lag == null || lag < 0) {
                return -1;
            }
            total += lag;
        }
        return total;
    }
}
