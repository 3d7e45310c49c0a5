package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import dev.rolloutingest.testsupport.AppSettings;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.ReadOptions;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A snapshot through the real parts (broker, registry, S3 API): taken on the merge-worker mid-stream, then more
 * records ingested and merged, the table compacted and collected; the snapshot reads the same row for row, a plain
 * lance-core reader at its tag sees exactly its rows, and its offsets say which records are in.
 */
class SnapshotIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TOPIC = "rollouts";

    @Test
    void aSnapshotTakenMidStreamReadsTheSameAfterMoreMergesCompactionAndGc() throws Exception {
        Path root =
                Path.of("target", "it-snapshot", UUID.randomUUID().toString()).toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root, "rollouts")) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            EmbeddedS3 s3 = cluster.s3();
            cluster.createDefaultTopics(2);
            TableLocation location = new TableLocation(s3.uri("table"), s3.lanceStorageOptions());
            Map<String, Object> common = AppSettings.of(cluster).table(location).map();
            Map<String, Object> ingestProps = new HashMap<>(common);
            ingestProps.putAll(Map.of(
                    "rollout.state.dir", root.resolve("ingest-state").toString(),
                    "rollout.seal.max.rows", "40",
                    "rollout.seal.max.age.ms", "300"));
            Map<String, Object> mergeProps = new HashMap<>(common);
            mergeProps.putAll(Map.of(
                    "rollout.state.dir", root.resolve("merge-state").toString(),
                    "rollout.merge.after.generations", "2",
                    "rollout.merge.max.pending.age.ms", "500"));
            RolloutPublisher publisher = new RolloutPublisher(kafka.bootstrapServers(), registry.confluentUrl());
            HttpClient http = HttpClient.newHttpClient();
            Map<String, Long> offsets = new TreeMap<>();
            Map<String, String> first;
            List<RolloutRow> listed;
            try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
                    MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start()) {
                publisher.publish(TOPIC, "snap", 300, 300, 32, 0, new AtomicLong());
                awaitReadable(ingest.table(), 300);
                String admin = merge.http().baseUrl();

                HttpResponse<String> created = send(http, "POST", admin + "/snapshots/mid");
                assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
                JsonNode snapshot = JSON.readTree(created.body());
                assertThat(snapshot.get("rows").asLong()).isEqualTo(300);
                snapshot.get("offsets")
                        .fields()
                        .forEachRemaining(
                                e -> offsets.put(e.getKey(), e.getValue().asLong()));
                assertThat(offsets).containsOnlyKeys(TOPIC + ":0", TOPIC + ":1");
                assertThat(offsets.values().stream().mapToLong(Long::longValue).sum())
                        .isEqualTo(300);
                assertThat(send(http, "POST", admin + "/snapshots/mid").statusCode())
                        .isEqualTo(409);
                assertThat(send(http, "POST", admin + "/snapshots/bad%20name").statusCode())
                        .isEqualTo(400);

                first = lanceRows(location, "mid");
                try (RolloutTable table =
                        RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                    listed = table.list(ListQuery.all(1000), "mid");
                }
                assertThat(first).hasSize(300);
                assertThat(listed).hasSize(300);
                // every record below the recorded offsets is in (each has its own record_id), none at or above
                for (String at : first.values()) {
                    String[] po = at.split("@");
                    assertThat(Long.parseLong(po[1])).isLessThan(offsets.get(TOPIC + ":" + po[0]));
                }

                // later: snap-0..199 written again, 100 new keys; merged, compacted, collected
                Thread.sleep(20); // the next records' Kafka timestamps are after this instant
                Instant beforeSecondBatch = Instant.now();
                Thread.sleep(20);
                publisher.publish(TOPIC, "snap", 200, 200, 32, 0, new AtomicLong());
                publisher.publish(TOPIC, "later", 100, 100, 32, 0, new AtomicLong());
                awaitMerged(location, 400, 300 + 200 + 100);
                // a cut by time, resolved through the broker: the records before it are the first 300
                assertThat(Launcher.run(concat(
                                new String[] {
                                    "snapshot",
                                    "create",
                                    "by-time",
                                    "--until-timestamp",
                                    beforeSecondBatch.toString(),
                                    "--bootstrap-servers",
                                    kafka.bootstrapServers()
                                },
                                storageArgs(location))))
                        .isZero();
            }
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                table.maintenance().compact(1_000_000);
                table.maintenance().collectGarbage(Duration.ZERO);
                assertThat(table.get("snap-7").orElseThrow().sourceOffset())
                        .isGreaterThan(table.get("snap-7", "mid").orElseThrow().sourceOffset());
                assertThat(table.list(ListQuery.all(1000), "mid")).containsExactlyInAnyOrderElementsOf(listed);
                assertThat(table.get("later-1", "mid")).isEmpty();
                TableSnapshots.Snapshot byTime = table.snapshots().get("by-time");
                assertThat(byTime.offsets()).isEqualTo(offsets);
                assertThat(table.list(ListQuery.all(1000), "by-time")).containsExactlyInAnyOrderElementsOf(listed);
            }
            assertThat(lanceRows(location, "mid")).isEqualTo(first);

            // the CLI: export to S3, bad requests with their exit codes, drop
            String[] table = storageArgs(location);
            String exported = s3.uri("exports/mid");
            assertThat(Launcher.run(concat(new String[] {"snapshot", "export", "mid", "--to", exported}, table)))
                    .isZero();
            TableLocation exportLocation = new TableLocation(exported, s3.lanceStorageOptions());
            assertThat(lanceRows(exportLocation, null)).isEqualTo(first);
            try (RootAllocator allocator = new RootAllocator();
                    Dataset out = open(allocator, exportLocation)) {
                assertThat(out.getConfig().get("rollout.snapshot.offsets"))
                        .isEqualTo(TOPIC + ":0=" + offsets.get(TOPIC + ":0") + "," + TOPIC + ":1="
                                + offsets.get(TOPIC + ":1"));
            }
            assertThat(Launcher.run(concat(new String[] {"snapshot", "export", "mid", "--to", exported}, table)))
                    .isEqualTo(SnapshotCommand.CONFLICT);
            assertThat(Launcher.run(concat(new String[] {"snapshot", "create", "mid"}, table)))
                    .isEqualTo(SnapshotCommand.CONFLICT);
            assertThat(Launcher.run(concat(
                            new String[] {
                                "snapshot",
                                "create",
                                "too-far",
                                "--until-offsets",
                                "0=100000,1=1",
                                "--bootstrap-servers",
                                kafka.bootstrapServers()
                            },
                            table)))
                    .isEqualTo(SnapshotCommand.BAD_REQUEST);
            assertThat(Launcher.run(concat(new String[] {"snapshot", "drop", "nope"}, table)))
                    .isEqualTo(SnapshotCommand.NOT_FOUND);
            assertThat(Launcher.run(concat(new String[] {"get", "snap-1", "--snapshot", "nope"}, table)))
                    .isEqualTo(SnapshotCommand.NOT_FOUND);
            assertThat(Launcher.run(concat(new String[] {"snapshot", "drop", "mid"}, table)))
                    .isZero();
            assertThat(Launcher.run(concat(new String[] {"snapshot", "drop", "by-time"}, table)))
                    .isZero();
            try (RolloutTable t = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                assertThat(t.snapshots().list()).isEmpty();
            }
        }
    }

    private static HttpResponse<String> send(HttpClient http, String method, String url) throws Exception {
        return http.send(
                HttpRequest.newBuilder(URI.create(url))
                        .method(method, HttpRequest.BodyPublishers.noBody())
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void awaitReadable(RolloutTable table, long rows) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline && table.countRows() < rows) {
            Thread.sleep(300);
        }
        assertThat(table.countRows()).isEqualTo(rows);
    }

    /** Until the base alone holds {@code rows} and every record up to {@code records} is merged. */
    private static void awaitMerged(TableLocation location, long rows, long records) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        long merged = 0;
        long base = 0;
        while (System.currentTimeMillis() < deadline) {
            try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                base = table.countBaseRows();
                merged = table.generations().watermarks().entrySet().stream()
                        .filter(e -> e.getKey().equals(ShardId.of(TOPIC, 0))
                                || e.getKey().equals(ShardId.of(TOPIC, 1)))
                        .mapToLong(Map.Entry::getValue)
                        .sum();
            }
            if (base == rows && merged == records) {
                return;
            }
            Thread.sleep(300);
        }
        assertThat(merged).as("records merged").isEqualTo(records);
        assertThat(base).as("base rows").isEqualTo(rows);
    }

    private static String[] storageArgs(TableLocation location) {
        List<String> args = new ArrayList<>(List.of("--table", location.uri()));
        location.storageOptions().forEach((k, v) -> args.addAll(List.of("--storage", k + "=" + v)));
        return args.toArray(String[]::new);
    }

    private static String[] concat(String[] a, String[] b) {
        String[] out = new String[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static Dataset open(RootAllocator allocator, TableLocation location) {
        return Dataset.open()
                .allocator(allocator)
                .uri(location.uri())
                .readOptions(new ReadOptions.Builder()
                        .setStorageOptions(location.storageOptions())
                        .build())
                .build();
    }

    /** record_id -> "partition@offset", read by lance-core alone at the tag (null: the latest version). */
    private static Map<String, String> lanceRows(TableLocation location, String tag) throws Exception {
        Map<String, String> rows = new HashMap<>();
        try (RootAllocator allocator = new RootAllocator();
                Dataset latest = open(allocator, location);
                Dataset at = tag == null ? latest.checkoutVersion(latest.version()) : latest.checkoutTag(tag);
                LanceScanner scanner = at.newScan(new ScanOptions.Builder()
                        .columns(List.of("record_id", "source_partition", "source_offset"))
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector("record_id");
                IntVector partitions = (IntVector) batch.getVector("source_partition");
                BigIntVector offsets = (BigIntVector) batch.getVector("source_offset");
                for (int i = 0; i < batch.getRowCount(); i++) {
                    String previous = rows.put(new String(ids.get(i)), partitions.get(i) + "@" + offsets.get(i));
                    assertThat(previous).as("a key held twice").isNull();
                }
            }
        }
        return rows;
    }
}
