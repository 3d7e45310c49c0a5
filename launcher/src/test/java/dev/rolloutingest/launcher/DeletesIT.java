package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.testsupport.AppSettings;
import dev.rolloutingest.testsupport.BaseRows;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Deletes through the real broker: `rollout-ingest delete` and DELETE /rollouts/{id} publish tombstones; reads stop
 * returning the keys once ingest seals them, while no merge-worker runs; a merge-worker started afterwards removes
 * the rows from the base (read back with lance-core alone); a later put brings a key back.
 */
class DeletesIT {
    @Test
    void tombstonesHideKeysWhenSealedAndTheMergeRemovesThemFromTheBase() throws Exception {
        Path root =
                Path.of("target", "it-deletes", UUID.randomUUID().toString()).toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            EmbeddedKafka kafka = cluster.kafka();
            ApicurioRegistry registry = cluster.registry();
            cluster.createDefaultTopics(2);
            Path tableDir = root.resolve("table");
            Map<String, Object> common = AppSettings.of(cluster).table(tableDir).map();
            Map<String, Object> ingestProps = new HashMap<>(common);
            ingestProps.putAll(Map.of(
                    "rollout.state.dir", root.resolve("ingest-state").toString(), "rollout.seal.max.age.ms", "300"));
            RolloutPublisher publisher = new RolloutPublisher(kafka.bootstrapServers(), registry.confluentUrl());
            TableLocation location = TableLocation.local(tableDir);
            try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start()) {
                publisher.publish("rollouts", "del", 50, 50, 16, 0, new AtomicLong());
                awaitRows(ingest.table(), 50);
                try (RolloutTable table =
                        RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
                    for (int p = 0; p < 2; p++) {
                        while (table.merges()
                                .pass(MergeRequest.of(ShardId.of("rollouts", p)).limits(0, 0))
                                .mergedAnything()) {
                            // the 50 rows into the base
                        }
                    }
                }
                assertThat(baseKeys(tableDir)).hasSize(50);

                assertThat(Launcher.run(
                                "delete",
                                "del-3",
                                "del-4",
                                "never-was",
                                "--bootstrap-servers",
                                kafka.bootstrapServers(),
                                "--table",
                                tableDir.toString(),
                                "--wait-ms",
                                "60000"))
                        .isZero();
                // over the read API: published, then visible
                try (RolloutTable reader =
                                RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry());
                        Deletes deletes =
                                new Deletes(Map.of("bootstrap.servers", kafka.bootstrapServers()), "rollouts")) {
                    var http = new dev.rolloutingest.runtime.HttpEndpoint("127.0.0.1", 0);
                    new ReadApi(
                                    dev.rolloutingest.table.catalog.TableCatalog.single(reader),
                                    deletes,
                                    Duration.ofSeconds(60),
                                    "rollouts")
                            .mount(http);
                    http.start();
                    try {
                        HttpResponse<String> deleted = HttpClient.newHttpClient()
                                .send(
                                        HttpRequest.newBuilder(URI.create(http.baseUrl() + "/rollouts/del-5"))
                                                .DELETE()
                                                .build(),
                                        HttpResponse.BodyHandlers.ofString());
                        assertThat(deleted.statusCode()).as(deleted.body()).isEqualTo(200);
                        assertThat(deleted.body()).contains("\"visible\":true");
                    } finally {
                        http.close();
                    }
                }
                assertThat(ingest.table().get("del-3")).isEmpty();
                assertThat(ingest.table().get("del-5")).isEmpty();
                assertThat(ingest.table().countRows()).isEqualTo(47);
                assertThat(ingest.registry()
                                .get("rollout.ingest.tombstones")
                                .counter()
                                .count())
                        .isEqualTo(4);
            }
            // sealed by the ingest app, not merged yet: the base still holds the rows
            assertThat(baseKeys(tableDir)).contains("del-3", "del-4", "del-5");

            Map<String, Object> mergeProps = new HashMap<>(common);
            mergeProps.putAll(Map.of(
                    "rollout.state.dir", root.resolve("merge-state").toString(),
                    "rollout.merge.after.generations", "1",
                    "rollout.merge.max.pending.age.ms", "200"));
            try (MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start()) {
                long deadline = System.currentTimeMillis() + 120_000;
                while (System.currentTimeMillis() < deadline && !allMerged(location)) {
                    Thread.sleep(300);
                }
                assertThat(allMerged(location)).as("every generation merged").isTrue();
                assertThat(merge.registry()
                                .get("rollout.merge.deletes")
                                .tag("result", "applied")
                                .counter()
                                .count())
                        .isEqualTo(3);
            }
            Set<String> base = baseKeys(tableDir);
            assertThat(base)
                    .hasSize(47)
                    .doesNotContain("del-3", "del-4", "del-5", "never-was")
                    .contains("del-6");

            // a put after the delete brings the key back
            try (IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start()) {
                publisher.publish("rollouts", "del", 4, 4, 16, 0, new AtomicLong()); // del-0..3
                long deadline = System.currentTimeMillis() + 120_000;
                while (System.currentTimeMillis() < deadline
                        && ingest.table().get("del-3").isEmpty()) {
                    Thread.sleep(300);
                }
                assertThat(ingest.table().get("del-3")).isPresent();
                assertThat(ingest.table().get("del-4")).isEmpty();
            }
        }
    }

    private static void awaitRows(RolloutTable table, long rows) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline && table.countRows() < rows) {
            Thread.sleep(300);
        }
        assertThat(table.countRows()).isEqualTo(rows);
    }

    private static boolean allMerged(TableLocation location) {
        try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int p = 0; p < 2; p++) {
                if (!table.generations().pending(ShardId.of("rollouts", p)).isEmpty()) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The base's record_ids, read by lance-core alone. */
    /** The live keys of the base as a plain lance-core reader sees them (fails on a key held twice). */
    private static Set<String> baseKeys(Path tableDir) {
        return BaseRows.live(TableLocation.local(tableDir), null).keySet();
    }
}
