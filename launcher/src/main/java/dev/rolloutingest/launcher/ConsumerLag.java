package dev.rolloutingest.launcher;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/** A consumer group's lag on a topic: latest read_committed offsets minus the group's committed offsets. */
final class ConsumerLag {
    private ConsumerLag() {}

    static Map<Integer, Long> of(Admin admin, String group, String topic) throws Exception {
        var description = admin.describeTopics(List.of(topic))
                .allTopicNames()
                .get(30, TimeUnit.SECONDS)
                .get(topic);
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        description
                .partitions()
                .forEach(p -> request.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
        var ends = admin.listOffsets(request, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
                .all()
                .get(30, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata()
                .get(30, TimeUnit.SECONDS);
        Map<Integer, Long> lag = new TreeMap<>();
        for (var end : ends.entrySet()) {
            OffsetAndMetadata c = committed.get(end.getKey());
            lag.put(end.getKey().partition(), end.getValue().offset() - (c == null ? 0 : c.offset()));
        }
        return lag;
    }
}
