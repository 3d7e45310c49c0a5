package dev.rolloutingest.runtime;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A failed stream thread leaves the consumer group at once. With static membership a stream thread's member keeps its
 * partitions until the session timeout after it stops, and Streams replaces a failed thread by one of a new index (a
 * new {@code group.instance.id}): for a whole session timeout nobody reads what the failed thread held. Once the
 * failed thread has ended, its member is removed from the group (as Streams' own removeStreamThread does), so the
 * group rebalances and the replacement takes the partitions over within seconds.
 */
final class FailedMemberRemoval implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(FailedMemberRemoval.class);
    private static final Pattern THREAD_INDEX = Pattern.compile("-StreamThread-(\\d+)$");
    /** How long a failed thread may take to stop (it closes its clients) before its member is removed anyway. */
    private static final Duration THREAD_STOP_WAIT = Duration.ofSeconds(60);

    private final String name;
    private final String groupId;
    private final StreamsConfig config;
    private final ExecutorService removals;
    private final Supplier<Set<String>> liveThreads;
    private Admin admin;

    /** @param liveThreads the names of the client's stream threads now */
    FailedMemberRemoval(String name, Properties streamsProps, Supplier<Set<String>> liveThreads) {
        this.name = name;
        this.liveThreads = liveThreads;
        this.config = new StreamsConfig(streamsProps);
        this.groupId = config.getString(StreamsConfig.APPLICATION_ID_CONFIG);
        this.removals = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, name + "-member-removal");
            thread.setDaemon(true);
            return thread;
        });
    }

    /** The static member id of the stream thread named {@code threadName}; null when membership is dynamic. */
    String memberOf(String threadName) {
        Matcher index = THREAD_INDEX.matcher(threadName);
        if (!index.find()) {
            return null;
        }
        Map<String, Object> consumer =
                config.getMainConsumerConfigs(groupId, threadName, Integer.parseInt(index.group(1)));
        Object member = consumer.get(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
        return member == null ? null : member.toString();
    }

    /** Removes {@code failed}'s static member from the group once the thread has ended (in the background). */
    void afterEnd(Thread failed) {
        try {
            String member = memberOf(failed.getName());
            if (member == null) {
                return; // a dynamic member leaves the group when its consumer closes
            }
            removals.execute(() -> remove(failed, member));
        } catch (RuntimeException e) {
            log.warn(
                    "{}: cannot remove the member of failed thread {} ({}); its partitions move after the session"
                            + " timeout",
                    name,
                    failed.getName(),
                    e.toString());
        }
    }

    private void remove(Thread failed, String member) {
        try {
            failed.join(THREAD_STOP_WAIT.toMillis());
            if (liveThreads.get().contains(failed.getName())) {
                // the replacement took the failed thread's index, so its member id: it holds the partitions already
                return;
            }
            synchronized (this) {
                if (admin == null) {
                    admin = Admin.create(config.getAdminConfigs(groupId + "-member-removal"));
                }
            }
            admin.removeMembersFromConsumerGroup(
                            groupId, new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove(member))))
                    .all()
                    .get(30, TimeUnit.SECONDS);
            log.info("{}: removed the failed thread's member {} from the group: its partitions move now", name, member);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // e.g. the member already left (a rebalance came first): nothing is held any more
            log.warn(
                    "{}: could not remove the failed thread's member {} from the group ({}); its partitions move"
                            + " after the session timeout at the latest",
                    name,
                    member,
                    e.toString());
        }
    }

    @Override
    public synchronized void close() {
        removals.shutdownNow();
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
    }
}
