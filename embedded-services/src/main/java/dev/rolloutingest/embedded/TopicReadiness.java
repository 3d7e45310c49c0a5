package dev.rolloutingest.embedded;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Creates topics and waits until every partition has a leader that answers offset requests.
 *
 * <p>Why: producing right after {@code createTopics} can hit NOT_LEADER_OR_FOLLOWER followed by endless
 * OutOfOrderSequenceException until the delivery timeout, losing records even with acks=all and
 * idempotence (KAFKA-15591). Nothing may produce to a topic this class created before it returns.
 */
public final class TopicReadiness {
    private TopicReadiness() {}

    /** Creates the topics that do not exist yet, then waits until all of them are ready. */
    public static void createAndAwait(Admin admin, Collection<NewTopic> topics, Duration timeout) {
        try {
            for (NewTopic topic : topics) {
                try {
                    admin.createTopics(List.of(topic)).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw new IllegalStateException(
                                "Could not create topic " + topic.name() + ": " + e.getCause(), e.getCause());
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while creating topics", e);
        }
        awaitReady(admin, topics.stream().map(NewTopic::name).toList(), timeout);
    }

    /** Loops describeTopics + listOffsets on every partition until both succeed, or fails at the timeout. */
    public static void awaitReady(Admin admin, Collection<String> topicNames, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try {
                Map<String, TopicDescription> descriptions =
                        admin.describeTopics(topicNames).allTopicNames().get();
                Map<TopicPartition, OffsetSpec> request = new HashMap<>();
                boolean allLed = true;
                for (TopicDescription description : descriptions.values()) {
                    for (var partition : description.partitions()) {
                        allLed &= partition.leader() != null
                                && !partition.leader().isEmpty();
                        request.put(new TopicPartition(description.name(), partition.partition()), OffsetSpec.latest());
                    }
                }
                if (allLed) {
                    admin.listOffsets(request).all().get();
                    return;
                }
            } catch (ExecutionException e) {
                last = e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for topics " + topicNames, e);
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for topics " + topicNames, e);
            }
        }
        throw new IllegalStateException(
                "Topics " + topicNames + " not ready (leader + offsets) within " + timeout
                        + (last == null ? "" : ": " + last.getCause()),
                last);
    }
}
