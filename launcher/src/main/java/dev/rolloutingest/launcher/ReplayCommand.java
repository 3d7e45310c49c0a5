package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Replay from topic offsets: positions a NEW ingest application (its application.id is the consumer group)
 * at the earliest offsets, at a timestamp, or at given offsets, before its first start: every partition of every
 * topic it reads (its list, or the existing topics its pattern matches). Kafka Streams
 * cannot seek, and an existing application's progress store skips offsets it sealed already, so a replay is
 * always a fresh application id; the command refuses a group that already has offsets or members.
 *
 * <p>Over 300 lines because its options are the command line (three ways to choose offsets, a dry run) and each is
 * checked against the broker before anything is set.
 */
@Command(
        name = "replay",
        mixinStandardHelpOptions = true,
        description = "Set a new ingest application's starting offsets (dry run unless --execute).")
final class ReplayCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "The ingest properties file of the replaying app (env vars apply too)")
    Path config;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    static final class Target {
        @Option(names = "--to-earliest", description = "Every partition from its first retained offset")
        boolean earliest;

        @Option(
                names = "--to-datetime",
                description = "The first offset at or after this instant, e.g. 2026-11-30T00:00:00Z")
        Instant datetime;

        @Option(
                names = "--to-offset",
                split = ",",
                description = "partition:offset pairs, e.g. 0:1200,1:900; topic:partition:offset when the app reads"
                        + " several topics")
        List<String> offsets;
    }

    @Option(names = "--execute", description = "Commit the offsets (without it, only print the plan)")
    boolean execute;

    @Option(
            names = "--live",
            required = true,
            description = "The live ingest app's properties file: the replay must not"
                    + " share its consumer group, generations topic or DLQ topic")
    Path live;

    @Override
    public Integer call() throws Exception {
        IngestConfig ingest = IngestConfig.load(ConfigSources.file(config), System.getenv());
        IngestConfig liveApp = IngestConfig.load(ConfigSources.file(live), System.getenv());
        String group = ingest.streamsProperties().getProperty("application.id");
        List<String> shared = new ArrayList<>();
        if (group.equals(liveApp.streamsProperties().getProperty("application.id"))) {
            shared.add("application.id " + group + " (the replay needs its own consumer group and progress)");
        }
        if (ingest.generationsTopic().equals(liveApp.generationsTopic())) {
            shared.add(IngestConfig.GENERATIONS_TOPIC + " " + ingest.generationsTopic()
                    + " (the live merge-worker would" + " read the replay's events)");
        }
        if (ingest.dlqTopic().equals(liveApp.dlqTopic())) {
            shared.add(IngestConfig.DLQ_TOPIC + " " + ingest.dlqTopic()
                    + " (old dead letters would be sent again into the" + " live DLQ)");
        }
        if (!shared.isEmpty()) {
            System.err.println("the replay shares with the live app: " + String.join("; ", shared)
                    + ". Give the replaying app its own in " + config);
            return 2;
        }
        try (Admin admin = Admin.create(ingest.clientConfig())) {
            ConsumerGroupDescription description = null;
            Map<TopicPartition, OffsetAndMetadata> committed = Map.of();
            try {
                description = admin.describeConsumerGroups(List.of(group))
                        .all()
                        .get(30, TimeUnit.SECONDS)
                        .get(group);
                committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata()
                        .get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof GroupIdNotFoundException)) {
                    throw e;
                }
            }
            if (description != null && (!description.members().isEmpty() || !committed.isEmpty())) {
                System.err.printf(
                        "group %s already has %s; a replay needs a new application.id (its progress store "
                                + "would skip offsets it sealed before)%n",
                        group,
                        description.members().isEmpty()
                                ? "committed offsets"
                                : "running members (state " + description.groupState() + ")");
                return 2;
            }
            List<String> topics = inputTopics(admin, ingest);
            if (topics.isEmpty()) {
                System.err.println("no topic matches " + ingest.input().describeInput() + ": nothing to replay");
                return 2;
            }
            Map<TopicPartition, Long> positions = positions(admin, topics);
            Map<TopicPartition, long[]> ranges = logRanges(admin, positions.keySet());
            for (Map.Entry<TopicPartition, Long> e : positions.entrySet()) {
                long[] range = ranges.get(e.getKey());
                if (e.getValue() < range[0] || e.getValue() > range[1]) {
                    System.err.printf(
                            "partition %d: offset %d is outside the log [%d, %d] (retention removed what is"
                                    + " before, nothing is after)%n",
                            e.getKey().partition(), e.getValue(), range[0], range[1]);
                    return 2;
                }
            }
            Map<String, Long> watermarks = watermarks(ingest);
            System.out.printf("replay plan for group %s on %s:%n", group, String.join(",", topics));
            Map<TopicPartition, Long> ordered = new TreeMap<>(
                    Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            ordered.putAll(positions);
            for (Map.Entry<TopicPartition, Long> e : ordered.entrySet()) {
                long watermark = watermarks.getOrDefault(
                        ShardId.of(e.getKey().topic(), e.getKey().partition()), 0L);
                System.out.printf(
                        "  %s from offset %d%s%s%n",
                        topics.size() == 1
                                ? "partition " + e.getKey().partition()
                                : e.getKey().topic() + " partition "
                                        + e.getKey().partition(),
                        e.getValue(),
                        unlisted.contains(e.getKey()) ? "  (not given: from the end, nothing replayed)" : "",
                        e.getValue() < watermark
                                ? "  (below the table's merged watermark " + watermark
                                        + ": those generations are ignored by readers; replay into a new table)"
                                : "");
            }
            if (!execute) {
                System.out.println("dry run: add --execute to commit these offsets");
                return 0;
            }
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            positions.forEach((tp, offset) -> commit.put(tp, new OffsetAndMetadata(offset)));
            admin.alterConsumerGroupOffsets(group, commit).all().get(30, TimeUnit.SECONDS);
            System.out.printf("committed; start the app: rollout-ingest ingest %s%n", config);
            return 0;
        }
    }

    /** Partitions --to-offset did not name: they get their log end, so every partition has a position. */
    private final Set<TopicPartition> unlisted = new HashSet<>();

    private static Map<TopicPartition, long[]> logRanges(Admin admin, Collection<TopicPartition> partitions)
            throws Exception {
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        partitions.forEach(tp -> {
            earliest.put(tp, OffsetSpec.earliest());
            latest.put(tp, OffsetSpec.latest());
        });
        var starts = admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS);
        var ends = admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, long[]> ranges = new HashMap<>();
        partitions.forEach(tp ->
                ranges.put(tp, new long[] {starts.get(tp).offset(), ends.get(tp).offset()}));
        return ranges;
    }

    /** The topics the replaying app reads: its list, or the existing topics its pattern matches. */
    private static List<String> inputTopics(Admin admin, IngestConfig ingest) throws Exception {
        if (ingest.input().inputPattern() == null) {
            return ingest.input().inputTopics();
        }
        return admin.listTopics().names().get(30, TimeUnit.SECONDS).stream()
                .filter(t -> ingest.input().inputPattern().matcher(t).matches())
                .sorted()
                .toList();
    }

    private Map<TopicPartition, Long> positions(Admin admin, List<String> topics) throws Exception {
        Map<String, Integer> partitionCounts = new HashMap<>();
        admin.describeTopics(topics)
                .allTopicNames()
                .get(30, TimeUnit.SECONDS)
                .forEach((name, description) ->
                        partitionCounts.put(name, description.partitions().size()));
        List<TopicPartition> all = new ArrayList<>();
        for (String topic : topics) {
            for (int p = 0; p < partitionCounts.get(topic); p++) {
                all.add(new TopicPartition(topic, p));
            }
        }
        Map<TopicPartition, Long> positions = new HashMap<>();
        if (target.offsets != null) {
            for (String given : target.offsets) {
                TopicPartition tp = partitionOf(given, topics, partitionCounts);
                positions.put(
                        tp,
                        Long.parseLong(
                                given.substring(given.lastIndexOf(':') + 1).trim()));
            }
            Map<TopicPartition, OffsetSpec> rest = new HashMap<>();
            all.forEach(tp -> {
                if (!positions.containsKey(tp)) {
                    rest.put(tp, OffsetSpec.latest());
                    unlisted.add(tp);
                }
            });
            if (!rest.isEmpty()) {
                admin.listOffsets(rest)
                        .all()
                        .get(30, TimeUnit.SECONDS)
                        .forEach((tp, info) -> positions.put(tp, info.offset()));
            }
            return positions;
        }
        OffsetSpec spec =
                target.earliest ? OffsetSpec.earliest() : OffsetSpec.forTimestamp(target.datetime.toEpochMilli());
        Map<TopicPartition, OffsetSpec> request = new HashMap<>();
        all.forEach(tp -> request.put(tp, spec));
        var answers = admin.listOffsets(request).all().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
        for (var e : answers.entrySet()) {
            if (e.getValue().offset() >= 0) {
                positions.put(e.getKey(), e.getValue().offset());
            } else {
                ends.put(e.getKey(), OffsetSpec.latest()); // no record at or after the time: start at the end
            }
        }
        if (!ends.isEmpty()) {
            admin.listOffsets(ends)
                    .all()
                    .get(30, TimeUnit.SECONDS)
                    .forEach((tp, info) -> positions.put(tp, info.offset()));
        }
        return positions;
    }

    /** The partition a --to-offset entry names: partition:offset (one topic) or topic:partition:offset. */
    private static TopicPartition partitionOf(String given, List<String> topics, Map<String, Integer> partitions) {
        String[] parts = given.split(":");
        if (parts.length == 2 && topics.size() > 1) {
            throw new IllegalArgumentException("--to-offset '" + given + "': the app reads " + topics.size()
                    + " topics (" + String.join(",", topics) + "): give topic:partition:offset");
        }
        if (parts.length != 2 && parts.length != 3) {
            throw new IllegalArgumentException(
                    "--to-offset wants partition:offset or topic:partition:offset, got '" + given + "'");
        }
        String topic = parts.length == 3 ? parts[0].trim() : topics.get(0);
        if (!partitions.containsKey(topic)) {
            throw new IllegalArgumentException("--to-offset '" + given + "': " + topic
                    + " is not an input topic of the app (" + String.join(",", topics) + ")");
        }
        int partition = Integer.parseInt(parts[parts.length - 2].trim());
        if (partition < 0 || partition >= partitions.get(topic)) {
            throw new IllegalArgumentException(topic + " has no partition " + partition);
        }
        return new TopicPartition(topic, partition);
    }

    /** Per shard, the highest merged watermark of the tables the replay writes to. */
    private static Map<String, Long> watermarks(IngestConfig ingest) {
        if (ingest.manyTables()) {
            Map<String, Long> highest = new HashMap<>();
            try (TableCatalog tables = TableCatalog.under(
                    ingest.tableLocation(), ingest.tableSettings(), new SimpleMeterRegistry(), ingest.tablesMax())) {
                for (String name : tables.names()) {
                    tables.open(name).ifPresent(t -> t.generations()
                            .watermarks()
                            .forEach((shard, w) -> highest.merge(shard, w, Math::max)));
                }
            }
            return highest;
        }
        try (RolloutTable table =
                RolloutTable.open(ingest.tableLocation(), ingest.tableSettings(), new SimpleMeterRegistry())) {
            return table.generations().watermarks();
        } catch (RolloutTableException.NotARolloutTable e) {
            return Map.of(); // a new table: nothing merged yet
        }
    }
}
