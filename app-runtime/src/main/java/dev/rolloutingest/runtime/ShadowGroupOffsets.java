package dev.rolloutingest.runtime;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Positions published as the committed offsets of a consumer group that no consumer ever joins, so every
 * standard lag tool (kafka-consumer-groups, kafka-exporter, Burrow, Kafka UIs) shows how far behind the
 * topic's end they are: "sealed" = not yet in a generation, "merged" = not yet in the base table.
 *
 * <p>Positions only move forward (a smaller one, from a replayed or re-read range, is ignored, and the
 * group's committed offsets at start are the floor) and are written at most once per interval, off the
 * caller's thread. A group that has members is refused at start: its offsets belong to real consumers.
 */
public final class ShadowGroupOffsets implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ShadowGroupOffsets.class);

    private final String group;
    private final String settingKey;
    private final Admin admin;
    private final Map<TopicPartition, Long> positions = new ConcurrentHashMap<>();
    private final Map<TopicPartition, Long> committed = new HashMap<>();
    private final ScheduledExecutorService flusher;

    /**
     * @param group the shadow group's id
     * @param settingKey the setting that names it, for the error when it is taken
     * @param adminConfig the admin client's settings (brokers and security)
     * @param interval how often changed positions are committed
     */
    public ShadowGroupOffsets(String group, String settingKey, Map<String, Object> adminConfig, Duration interval) {
        this.group = group;
        this.settingKey = settingKey;
        this.admin = Admin.create(adminConfig);
        try {
            refuseIfItHasMembers();
            admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS)
                    .forEach((tp, offset) -> {
                        if (offset != null) {
                            committed.put(tp, offset.offset());
                            positions.put(tp, offset.offset());
                        }
                    });
        } catch (ConfigException e) {
            admin.close();
            throw e;
        } catch (Exception e) {
            admin.close();
            throw new ConfigException(
                    settingKey,
                    group,
                    "cannot read the group's offsets from " + adminConfig.get("bootstrap.servers") + " within 30 s ("
                            + e + "); on a SASL/SSL cluster give the client security settings as streams.*");
        }
        this.flusher = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "shadow-group-" + group);
            t.setDaemon(true);
            return t;
        });
        flusher.scheduleWithFixedDelay(this::flush, interval.toMillis(), interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void refuseIfItHasMembers() throws Exception {
        try {
            ConsumerGroupDescription description = admin.describeConsumerGroups(List.of(group))
                    .describedGroups()
                    .get(group)
                    .get(30, TimeUnit.SECONDS);
            if (!description.members().isEmpty()) {
                throw new ConfigException(
                        settingKey,
                        group,
                        "the consumer group has " + description.members().size()
                                + " member(s); it must be a group no consumer joins (choose another name, or empty to disable)");
            }
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                throw e;
            }
        }
    }

    public String group() {
        return group;
    }

    /** Everything before {@code offset} in this partition has arrived where this group tracks. */
    public void advance(TopicPartition partition, long offset) {
        positions.merge(partition, offset, Math::max);
    }

    /** The position last given for a partition, if any. */
    public Long position(TopicPartition partition) {
        return positions.get(partition);
    }

    synchronized void flush() {
        Map<TopicPartition, OffsetAndMetadata> changed = new HashMap<>();
        positions.forEach((tp, offset) -> {
            Long before = committed.get(tp);
            if (before == null || offset > before) {
                changed.put(tp, new OffsetAndMetadata(offset));
            }
        });
        if (changed.isEmpty()) {
            return;
        }
        try {
            admin.alterConsumerGroupOffsets(group, changed).all().get(30, TimeUnit.SECONDS);
            changed.forEach((tp, offset) -> committed.put(tp, offset.offset()));
        } catch (Exception e) {
            // Next interval again; the positions are kept. A group some consumer joined refuses the write.
            log.warn(
                    "Could not commit the positions of group {} ({} partitions): {}",
                    group,
                    changed.size(),
                    e.getMessage());
        }
    }

    @Override
    public void close() {
        flusher.shutdown();
        try {
            flusher.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        flush();
        admin.close(Duration.ofSeconds(10));
    }
}
