package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import dev.rolloutingest.table.snapshots.TableSnapshots.Cut;
import dev.rolloutingest.table.snapshots.TableSnapshots.SnapshotException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * Named snapshots of the table for training runs: create (fold what is pending up to a cut, then tag the base
 * version), list, drop, export. Exit codes: 0 done, 2 bad request (name, cut), 3 no such snapshot, 4 the name
 * or the export target is taken.
 */
@Command(
        name = "snapshot",
        mixinStandardHelpOptions = true,
        description = "Named, immutable states of the table at known Kafka offsets.",
        subcommands = {
            SnapshotCommand.Create.class,
            SnapshotCommand.ListSnapshots.class,
            SnapshotCommand.Drop.class,
            SnapshotCommand.Export.class
        })
final class SnapshotCommand implements Runnable {
    static final int BAD_REQUEST = 2;
    static final int NOT_FOUND = 3;
    static final int CONFLICT = 4;

    @Override
    public void run() {
        System.err.println("snapshot: give a subcommand: create, list, drop or export (--help)");
    }

    /** The exit code of a refused request, its message on stderr. */
    static int refused(SnapshotException e) {
        System.err.println("snapshot: " + e.getMessage());
        return switch (e.kind()) {
            case BAD_REQUEST -> BAD_REQUEST;
            case NOT_FOUND -> NOT_FOUND;
            case CONFLICT -> CONFLICT;
        };
    }

    @Command(
            name = "create",
            mixinStandardHelpOptions = true,
            description = "Fold what is pending up to the cut and tag the base version that holds it; prints it"
                    + " as JSON. Without a cut: every record sealed now.")
    static final class Create implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Parameters(index = "0", description = "Snapshot name: letters, digits, '.', '_' or '-'")
        String name;

        @Option(
                names = "--topic",
                descriptionKey = IngestConfig.INPUT_TOPIC,
                description = "The input topic (default ${DEFAULT-VALUE}; setting " + IngestConfig.INPUT_TOPIC + ")")
        String topic;

        @ArgGroup(exclusive = true)
        Until until;

        static final class Until {
            @Option(
                    names = "--until-offsets",
                    split = ",",
                    paramLabel = "PARTITION=OFFSET",
                    description = "Per partition, the first offset left out, e.g. 0=1200,1=900; every partition"
                            + " the table holds must be named")
            Map<Integer, Long> offsets;

            @Option(
                    names = "--until-timestamp",
                    description = "Leave out records with a Kafka timestamp at or after this instant, e.g."
                            + " 2026-12-01T00:00:00Z (needs --bootstrap-servers)")
            Instant timestamp;
        }

        @Option(names = "--bootstrap-servers", description = "Kafka, to resolve --until-timestamp and check a cut")
        String bootstrapServers;

        @Mixin
        KafkaClientOptions kafka;

        @Option(
                names = "--max-generations-per-pass",
                descriptionKey = MergeConfig.MAX_GENERATIONS,
                description =
                        "Generations each merge pass of the fold takes at most (default ${DEFAULT-VALUE}; setting "
                                + MergeConfig.MAX_GENERATIONS + ")")
        int maxGenerationsPerPass;

        @Option(
                names = "--max-bytes-per-pass",
                descriptionKey = MergeConfig.MAX_BYTES,
                description =
                        "Sealed bytes each merge pass of the fold takes at most (default ${DEFAULT-VALUE}; setting "
                                + MergeConfig.MAX_BYTES + ")")
        long maxBytesPerPass;

        @Override
        public Integer call() throws Exception {
            TableSettings passes = table.settings()
                    .with(TableSettings.MERGE_MAX_GENERATIONS, maxGenerationsPerPass)
                    .with(TableSettings.MERGE_MAX_BYTES, maxBytesPerPass);
            try (RolloutTable t = RolloutTable.open(table.location(), passes, new SimpleMeterRegistry())) {
                Cut cut = cut();
                TableSnapshots.Snapshot created = t.snapshots().create(name, cut);
                System.out.println(
                        HttpEndpoint.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(created.describe()));
                return 0;
            } catch (SnapshotException e) {
                return refused(e);
            }
        }

        private Cut cut() throws Exception {
            if (until == null) {
                return Cut.everythingSealed(topic);
            }
            if (until.timestamp != null && bootstrapServers == null) {
                throw new SnapshotException(
                        SnapshotException.Kind.BAD_REQUEST, "--until-timestamp needs --bootstrap-servers");
            }
            if (bootstrapServers == null) {
                return new Cut(topic, until.offsets);
            }
            try (Admin admin = Admin.create(kafka.clientConfig(bootstrapServers))) {
                Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
                List<Integer> partitions =
                        admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().stream()
                                .map(p -> p.partition())
                                .toList();
                partitions.forEach(p -> ends.put(new TopicPartition(topic, p), OffsetSpec.latest()));
                Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> end =
                        admin.listOffsets(ends).all().get();
                Map<Integer, Long> offsets = new TreeMap<>();
                if (until.timestamp != null) {
                    Map<TopicPartition, OffsetSpec> at = new HashMap<>();
                    partitions.forEach(p -> at.put(
                            new TopicPartition(topic, p), OffsetSpec.forTimestamp(until.timestamp.toEpochMilli())));
                    admin.listOffsets(at)
                            .all()
                            .get()
                            .forEach((tp, info) -> offsets.put(
                                    tp.partition(),
                                    info.offset() < 0 ? end.get(tp).offset() : info.offset()));
                } else {
                    for (Map.Entry<Integer, Long> e : until.offsets.entrySet()) {
                        long last = end.containsKey(new TopicPartition(topic, e.getKey()))
                                ? end.get(new TopicPartition(topic, e.getKey())).offset()
                                : -1;
                        if (e.getValue() > last) {
                            throw new SnapshotException(
                                    SnapshotException.Kind.BAD_REQUEST,
                                    "The cut " + topic + ":" + e.getKey() + "=" + e.getValue()
                                            + " is beyond the topic's end ("
                                            + (last < 0 ? "no such partition" : "end offset " + last) + ")");
                        }
                        offsets.put(e.getKey(), e.getValue());
                    }
                }
                return new Cut(topic, offsets);
            }
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "Print every snapshot as a JSON line.")
    static final class ListSnapshots implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Override
        public Integer call() throws Exception {
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                for (TableSnapshots.Snapshot s : t.snapshots().list()) {
                    System.out.println(HttpEndpoint.JSON.writeValueAsString(s.describe()));
                }
                return 0;
            }
        }
    }

    @Command(
            name = "drop",
            mixinStandardHelpOptions = true,
            description = "Drop a snapshot: GC may then remove what only it kept.")
    static final class Drop implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Parameters(index = "0", description = "Snapshot name")
        String name;

        @Override
        public Integer call() throws Exception {
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                t.snapshots().drop(name);
                System.err.println("snapshot " + name + " dropped");
                return 0;
            } catch (SnapshotException e) {
                return refused(e);
            }
        }
    }

    @Command(
            name = "export",
            mixinStandardHelpOptions = true,
            description = "Write a snapshot as a standalone Lance dataset (local path or s3://), its offsets in the"
                    + " dataset's config.")
    static final class Export implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Parameters(index = "0", description = "Snapshot name")
        String name;

        @Option(names = "--to", required = true, description = "Target URI; it must not hold a dataset")
        String to;

        @Option(
                names = "--to-storage",
                description = "Lance storage option of the target, repeatable (default: the table's own)")
        Map<String, String> toStorage;

        @Override
        public Integer call() throws Exception {
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                Map<String, String> storage =
                        toStorage == null ? table.location().storageOptions() : toStorage;
                long rows = t.snapshots().export(name, new TableLocation(to, storage));
                System.err.println("snapshot " + name + " exported to " + to + ": " + rows + " rows");
                return 0;
            } catch (SnapshotException e) {
                return refused(e);
            }
        }
    }
}
