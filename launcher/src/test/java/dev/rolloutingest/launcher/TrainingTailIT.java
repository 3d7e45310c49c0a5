package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.reads.TailCursor;
import dev.rolloutingest.testsupport.AppSettings;
import dev.rolloutingest.testsupport.Await;
import dev.rolloutingest.testsupport.Rollouts;
import dev.rolloutingest.testsupport.TestCluster;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.junit.jupiter.api.Test;

/**
 * A trainer's tail through the real broker: GET /rollouts:tail polled over HTTP (read with Arrow's own reader) while
 * records are produced to two partitions, sealed, merged, compacted and garbage-collected, and both apps are
 * restarted part way; every id is handed over exactly once, and each delete once as a delete event.
 */
class TrainingTailIT {
    private static final int RECORDS = 3_000;
    private static final int DELETED = 20;

    @Test
    void aTailHandsOverEveryIdOnceWhileRecordsAreProducedMergedAndCompacted() throws Exception {
        Path root = Path.of("target", "it-training-tail", UUID.randomUUID().toString())
                .toAbsolutePath();
        try (TestCluster cluster = TestCluster.start(root)) {
            cluster.createDefaultTopics(2);
            Path tableDir = root.resolve("table");
            Map<String, Object> common = AppSettings.of(cluster).table(tableDir).map();
            Map<String, Object> ingestProps = new HashMap<>(common);
            ingestProps.put("rollout.state.dir", root.resolve("ingest-state").toString());
            ingestProps.put("rollout.seal.max.age.ms", 300L);
            Map<String, Object> mergeProps = new HashMap<>(common);
            mergeProps.put("rollout.state.dir", root.resolve("merge-state").toString());
            mergeProps.put(MergeConfig.AFTER_GENERATIONS, 3);
            mergeProps.put(MergeConfig.MAX_PENDING_AGE_MS, 1000L);
            mergeProps.put(MergeConfig.COMPACTION_INTERVAL_MS, 1500L);
            mergeProps.put(MergeConfig.GC_INTERVAL_MS, 2000L);
            mergeProps.put(MergeConfig.GC_GRACE_MS, 1000L);

            Map<String, Integer> handedOver = new ConcurrentHashMap<>();
            Map<String, Integer> deletesHandedOver = new ConcurrentHashMap<>();
            AtomicLong answers = new AtomicLong();
            AtomicReference<String> lastCursor = new AtomicReference<>();
            AtomicBoolean tailing = new AtomicBoolean(true);
            List<Throwable> tailErrors = new ArrayList<>();
            TableLocation location = TableLocation.local(tableDir);
            IngestApp ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
            MergeApp merge = new MergeApp(MergeConfig.of(mergeProps)).start();
            try (RolloutTable reader = RolloutTable.open(
                            location,
                            TableSettings.DEFAULTS.with(TableSettings.READ_REFRESH_MS, 200L),
                            new SimpleMeterRegistry());
                    HttpEndpoint http = new HttpEndpoint("127.0.0.1", 0)) {
                new ReadApi(reader).mount(http);
                http.start();
                HttpClient client = HttpClient.newHttpClient();
                // the trainer: polls the tail, small answers (max_offsets) so one poll rarely holds everything
                Thread trainer = new Thread(
                        () -> {
                            String cursor = null;
                            lastCursor.set("none");
                            try (RootAllocator allocator = new RootAllocator()) {
                                while (tailing.get()) {
                                    String query = "/rollouts:tail?columns=record_id&max_offsets=400"
                                            + (cursor == null ? "" : "&cursor=" + cursor);
                                    HttpResponse<InputStream> response = client.send(
                                            HttpRequest.newBuilder(URI.create(http.baseUrl() + query))
                                                    .build(),
                                            HttpResponse.BodyHandlers.ofInputStream());
                                    if (response.statusCode() != 200) {
                                        throw new AssertionError("tail answered " + response.statusCode() + ": "
                                                + new String(response.body().readAllBytes()));
                                    }
                                    String next = response.headers()
                                            .firstValue("Rollout-Cursor")
                                            .orElseThrow();
                                    try (ArrowStreamReader stream = new ArrowStreamReader(response.body(), allocator)) {
                                        VectorSchemaRoot batch = stream.getVectorSchemaRoot();
                                        while (stream.loadNextBatch()) {
                                            FieldVector ids = batch.getVector("record_id");
                                            BitVector deleted = (BitVector) batch.getVector("_deleted");
                                            for (int i = 0; i < batch.getRowCount(); i++) {
                                                String id = ids.getObject(i).toString();
                                                (deleted.get(i) == 1 ? deletesHandedOver : handedOver)
                                                        .merge(id, 1, Integer::sum);
                                            }
                                        }
                                    }
                                    cursor = next;
                                    lastCursor.set(
                                            TailCursor.decode(next).offsets().toString());
                                    answers.incrementAndGet();
                                    Thread.sleep(50);
                                }
                            } catch (Throwable e) {
                                synchronized (tailErrors) {
                                    tailErrors.add(e);
                                }
                            }
                        },
                        "trainer");
                trainer.start();

                Rollouts rollouts = new Rollouts(cluster, new RolloutGenerator("tail", 64, 3));
                Map<String, Long> latest = new HashMap<>();
                AtomicLong produced = new AtomicLong();
                rollouts.produce("rollouts", 0, RECORDS / 2, RECORDS, latest, produced, 20);
                // both apps restart part way
                merge.close();
                ingest.close();
                ingest = new IngestApp(IngestConfig.of(ingestProps)).start();
                merge = new MergeApp(MergeConfig.of(mergeProps)).start();
                rollouts.produce("rollouts", RECORDS / 2, RECORDS, RECORDS, latest, produced, 20);
                RolloutTable table = reader;
                Await.until(
                        120,
                        "every id handed over",
                        () -> handedOver.size() >= RECORDS || !tailErrors.isEmpty(),
                        () -> "handed over " + handedOver.size() + " of " + RECORDS + " after " + answers.get()
                                + " polls, cursor at " + lastCursor.get() + "; not handed over: "
                                + missing(table, handedOver));
                // a compaction of the base while the trainer goes on tailing (the merge-worker compacts too)
                compact(reader);
                try (Deletes deletes =
                        new Deletes(Map.of("bootstrap.servers", cluster.bootstrapServers()), "rollouts")) {
                    for (int i = 0; i < DELETED; i++) {
                        deletes.publish(RolloutGenerator.recordId("tail", i));
                    }
                }
                Await.until(
                        120,
                        "every delete handed over",
                        () -> deletesHandedOver.size() >= DELETED || !tailErrors.isEmpty());
                long settled = answers.get();
                Await.until(30, "a few more polls", () -> answers.get() >= settled + 5 || !tailErrors.isEmpty());
                tailing.set(false);
                trainer.join(30_000);
            } finally {
                merge.close();
                ingest.close();
            }
            assertThat(tailErrors).isEmpty();
            assertThat(handedOver).hasSize(RECORDS);
            assertThat(handedOver.values()).as("times an id was handed over").containsOnly(1);
            assertThat(deletesHandedOver).hasSize(DELETED);
            assertThat(deletesHandedOver.values())
                    .as("times a delete was handed over")
                    .containsOnly(1);
            assertThat(answers.get()).as("polls").isGreaterThan(10);
        }
    }

    /** Where the first ids never handed over are: partition and offset of the row the table holds. */
    private static String missing(RolloutTable table, Map<String, Integer> handedOver) {
        List<String> found = new ArrayList<>();
        for (int i = 0; i < RECORDS && found.size() < 10; i++) {
            String id = RolloutGenerator.recordId("tail", i);
            if (!handedOver.containsKey(id)) {
                found.add(id
                        + table.get(id)
                                .map(row -> "@" + row.sourcePartition() + ":" + row.sourceOffset())
                                .orElse(" (not in the table)"));
            }
        }
        return found.toString();
    }

    private static void compact(RolloutTable table) throws InterruptedException {
        for (int attempt = 0; ; attempt++) {
            try {
                table.maintenance().compact(1_000_000);
                return;
            } catch (RuntimeException e) {
                // lost to the merge-worker's own compaction, or to a round deleting rows in a fragment it rewrote
                boolean lost = e instanceof RolloutTableException
                        || dev.rolloutingest.table.storage.FencedCommit.isPreempted(e);
                if (!lost || attempt >= 5) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }
}
