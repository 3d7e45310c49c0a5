package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.Tombstones;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.types.pojo.Field;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The scan and tail routes through a real endpoint with bearer tokens, their answers read by Arrow's own stream reader
 * (nothing of the project's on the reading side).
 */
class TrainingReadsHttpTest {
    private static final String READ_TOKEN = "read-token-0123456789abcdef";
    private static final String TOPIC = "rollouts";

    private final HttpClient client = HttpClient.newHttpClient();
    private RolloutTable table;
    private HttpEndpoint http;

    @BeforeEach
    void serve() {
        Path dir = Path.of("target", "training-reads", UUID.randomUUID().toString())
                .toAbsolutePath();
        table = RolloutTable.createOrOpen(
                TableLocation.local(dir),
                TableSettings.DEFAULTS.with(TableSettings.SCAN_BATCH_ROWS, 64),
                new SimpleMeterRegistry());
        write(0, 0, 299, "exp-a"); // 300 keys, merged below
        table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(100, Long.MAX_VALUE));
        write(0, 300, 349, "exp-b"); // 50 more keys, pending
        http = new HttpEndpoint(
                "127.0.0.1", 0, HttpAccess.fromEnv(Map.of("HTTP_AUTH_TOKENS", "trainer:read:" + READ_TOKEN)));
        new ReadApi(table).mount(http);
        // an answer that fails part way, as a scan whose generation goes missing would
        http.route(
                "/broken",
                HttpAccess.Access.READ,
                exchange ->
                        HttpEndpoint.Response.streamed(200, "application/vnd.apache.arrow.stream", Map.of(), out -> {
                            out.write(new byte[4096]);
                            out.flush();
                            throw new IllegalStateException("the table went away");
                        }));
        http.start();
    }

    private void write(int partition, long first, long last, String experiment) {
        RolloutGenerator generator = new RolloutGenerator(experiment, 1024, 7);
        List<RolloutRow> rows = new ArrayList<>();
        for (long offset = first; offset <= last; offset++) {
            Rollout rollout = generator.rollout(offset, (int) offset);
            rows.add(new RolloutRow(rollout, partition, offset, Instant.now()));
        }
        table.generations().write(TOPIC, partition, first, last, rows, rows.size() * 1024L);
    }

    @AfterEach
    void stop() {
        http.close();
        table.close();
    }

    private HttpResponse<InputStream> get(String path, String token) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(http.baseUrl() + path));
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
    }

    /** An answer as Arrow's reader sees it: column names, row count, batches, and per record_id its _deleted. */
    record Answer(List<String> columns, long rows, int batches, int largestBatch, Map<String, Boolean> deleted) {}

    private static Answer read(HttpResponse<InputStream> response) throws Exception {
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type")).contains("application/vnd.apache.arrow.stream");
        try (RootAllocator allocator = new RootAllocator();
                ArrowStreamReader reader = new ArrowStreamReader(response.body(), allocator)) {
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            List<String> columns =
                    root.getSchema().getFields().stream().map(Field::getName).toList();
            long rows = 0;
            int batches = 0;
            int largest = 0;
            Map<String, Boolean> deleted = new HashMap<>();
            while (reader.loadNextBatch()) {
                batches++;
                largest = Math.max(largest, root.getRowCount());
                FieldVector ids = root.getVector("record_id");
                BitVector deletes = (BitVector) root.getVector("_deleted");
                for (int i = 0; i < root.getRowCount(); i++) {
                    if (ids != null) {
                        deleted.put(ids.getObject(i).toString(), deletes != null && deletes.get(i) == 1);
                    }
                }
                rows += root.getRowCount();
            }
            return new Answer(columns, rows, batches, largest, deleted);
        }
    }

    private static String json(HttpResponse<InputStream> response) throws Exception {
        try (InputStream body = response.body()) {
            return new String(body.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void aScanStreamsBasePlusPendingInBatchesThatArrowsOwnReaderReads() throws Exception {
        Answer all = read(get("/rollouts:scan", READ_TOKEN));
        assertThat(all.rows()).isEqualTo(350);
        assertThat(all.largestBatch()).isLessThanOrEqualTo(64);
        assertThat(all.batches()).isGreaterThanOrEqualTo(350 / 64);
        assertThat(all.columns()).contains("record_id", "binary_payload", "source_offset");

        Answer projected = read(get(
                "/rollouts:scan?columns=record_id,reward&experiment=exp-b&policy_version_min=340&batch_rows=4",
                READ_TOKEN));
        assertThat(projected.columns()).containsExactly("record_id", "reward");
        assertThat(projected.rows()).isEqualTo(10);
        assertThat(projected.largestBatch()).isLessThanOrEqualTo(4);
        assertThat(read(get(
                                "/rollouts:scan?limit=5&include_in_training=true&reward_min=0&reward_max=1"
                                        + "&created_from=2000-01-01T00:00:00Z",
                                READ_TOKEN))
                        .rows())
                .isEqualTo(5);
    }

    @Test
    void aTailHandsOverWhatCameAfterTheScansCursorWithDeletes() throws Exception {
        HttpResponse<InputStream> scan = get("/rollouts:scan?columns=record_id", READ_TOKEN);
        String cursor = scan.headers().firstValue("Rollout-Cursor").orElseThrow();
        assertThat(read(scan).rows()).isEqualTo(350);

        Answer idle = read(get("/rollouts:tail?cursor=" + cursor, READ_TOKEN));
        assertThat(idle.rows()).isZero();

        write(0, 350, 359, "exp-c");
        Rollout deleted = Tombstones.of(
                new RolloutGenerator("exp-a", 1024, 7).rollout(3, 3).getRecordId(), Instant.now());
        table.generations().write(TOPIC, 0, 360, 360, List.of(new RolloutRow(deleted, 0, 360, Instant.now())), 100);
        HttpResponse<InputStream> tail =
                get("/rollouts:tail?columns=record_id,policy_version&cursor=" + cursor, READ_TOKEN);
        String next = tail.headers().firstValue("Rollout-Cursor").orElseThrow();
        assertThat(tail.headers().firstValue("Rollout-Tail-More")).contains("false");
        Answer changes = read(tail);
        assertThat(changes.columns()).containsExactly("record_id", "policy_version", "_deleted");
        assertThat(changes.rows()).isEqualTo(11);
        assertThat(changes.deleted()).containsEntry(deleted.getRecordId(), true).containsValue(false);
        assertThat(read(get("/rollouts:tail?cursor=" + next, READ_TOKEN)).rows())
                .isZero();
        // from the start (no cursor): every key once, the deleted one as a delete
        Answer everything = read(get("/rollouts:tail?columns=record_id", READ_TOKEN));
        assertThat(everything.rows()).isEqualTo(360);
        assertThat(everything.deleted()).containsEntry(deleted.getRecordId(), true);
    }

    @Test
    void badRequestsAnswer400WithTheReasonAndTheRoutesNeedAReadToken() throws Exception {
        Map<String, String> bad = Map.of(
                "/rollouts:scan?columns=record_id,nope", "unknown column 'nope'",
                "/rollouts:scan?policy_version_min=abc", "policy_version_min must be a whole number",
                "/rollouts:scan?limit=1000000000000", "limit must be at most",
                "/rollouts:scan?batch_rows=100000", "batch rows must be at most",
                "/rollouts:scan?created_from=yesterday", "ISO-8601",
                "/rollouts:scan?frobnicate=1", "unknown parameter 'frobnicate'",
                "/rollouts:tail?cursor=garbage", "cursor",
                "/rollouts:tail?limit=10", "unknown parameter 'limit'");
        for (Map.Entry<String, String> request : bad.entrySet()) {
            HttpResponse<InputStream> response = get(request.getKey(), READ_TOKEN);
            JsonNode body = HttpEndpoint.JSON.readTree(json(response));
            assertThat(response.statusCode()).as(request.getKey()).isEqualTo(400);
            assertThat(body.get("error").asText()).as(request.getKey()).contains(request.getValue());
        }
        // a cursor of another table
        try (RolloutTable other = RolloutTable.createOrOpen(
                TableLocation.local(
                        Path.of("target", "training-reads", UUID.randomUUID().toString())
                                .toAbsolutePath()),
                TableSettings.DEFAULTS,
                new SimpleMeterRegistry())) {
            String foreign = URLEncoder.encode(other.startCursor(TOPIC).encode(), StandardCharsets.UTF_8);
            HttpResponse<InputStream> response = get("/rollouts:tail?cursor=" + foreign, READ_TOKEN);
            assertThat(response.statusCode()).isEqualTo(400);
            assertThat(json(response)).contains("another table");
        }
        // a cursor ahead of the table: 410
        var ahead = new dev.rolloutingest.table.reads.TailCursor(
                table.startCursor(TOPIC).table(), TOPIC, Map.of(0, 1_000_000L));
        HttpResponse<InputStream> gone = get("/rollouts:tail?cursor=" + ahead.encode(), READ_TOKEN);
        assertThat(gone.statusCode()).isEqualTo(410);
        assertThat(json(gone)).contains("scan");
        assertThat(get("/rollouts:scan", null).statusCode()).isEqualTo(401);
        assertThat(get("/rollouts:tail", "wrong-token-0123456789abcdef").statusCode())
                .isIn(401, 403);
        assertThat(get("/rollouts:scan?snapshot=nope", READ_TOKEN).statusCode()).isEqualTo(404);
    }

    @Test
    void anAnswerThatFailsPartWayBreaksTheConnectionInsteadOfEndingCleanly() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> {
                    HttpResponse<InputStream> response = get("/broken", READ_TOKEN);
                    try (InputStream body = response.body()) {
                        body.readAllBytes();
                    }
                })
                .isInstanceOf(java.io.IOException.class);
    }

    @Test
    void eachTableOfManyIsScannedAtItsOwnRoute() throws Exception {
        Path root = Path.of("target", "training-reads", UUID.randomUUID().toString())
                .toAbsolutePath();
        try (dev.rolloutingest.table.catalog.TableCatalog tables = dev.rolloutingest.table.catalog.TableCatalog.under(
                        TableLocation.local(root), TableSettings.DEFAULTS, new SimpleMeterRegistry(), 10);
                HttpEndpoint many = new HttpEndpoint(
                        "127.0.0.1", 0, HttpAccess.fromEnv(Map.of("HTTP_AUTH_TOKENS", "trainer:read:" + READ_TOKEN)))) {
            RolloutTable grpo = tables.createOrOpen("grpo");
            tables.createOrOpen("ppo");
            List<RolloutRow> rows = new ArrayList<>();
            RolloutGenerator generator = new RolloutGenerator("grpo", 64, 7);
            for (long offset = 0; offset < 20; offset++) {
                rows.add(new RolloutRow(generator.rollout(offset, 0), 0, offset, Instant.now()));
            }
            grpo.generations().write(TOPIC, 0, 0, 19, rows, 20 * 64L);
            new ReadApi(tables, null, java.time.Duration.ZERO, TOPIC).mount(many);
            many.start();
            HttpClient client = HttpClient.newHttpClient();
            java.util.function.Function<String, HttpResponse<InputStream>> get = path -> {
                try {
                    return client.send(
                            HttpRequest.newBuilder(URI.create(many.baseUrl() + path))
                                    .header("Authorization", "Bearer " + READ_TOKEN)
                                    .build(),
                            HttpResponse.BodyHandlers.ofInputStream());
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            };
            assertThat(read(get.apply("/tables/grpo/rollouts:scan")).rows()).isEqualTo(20);
            assertThat(read(get.apply("/tables/ppo/rollouts:scan")).rows()).isZero();
            assertThat(read(get.apply("/tables/grpo/rollouts:tail")).rows()).isEqualTo(20);
            assertThat(get.apply("/tables/none/rollouts:scan").statusCode()).isEqualTo(404);
            assertThat(get.apply("/rollouts:scan").statusCode())
                    .as("the one-table route of a deployment of many names the other form")
                    .isEqualTo(400);

            // the one-table routes, per table, and the list of tables
            HttpResponse<InputStream> one = get.apply("/tables/grpo/rollouts/grpo-3");
            assertThat(one.statusCode()).isEqualTo(200);
            assertThat(HttpEndpoint.JSON.readTree(json(one)).get("record_id").asText())
                    .isEqualTo("grpo-3");
            assertThat(get.apply("/tables/ppo/rollouts/grpo-3").statusCode())
                    .as("another table's key")
                    .isEqualTo(404);
            JsonNode page =
                    HttpEndpoint.JSON.readTree(json(get.apply("/tables/grpo/rollouts?experiment=grpo&limit=5")));
            assertThat(page.get("count").asInt()).isEqualTo(5);
            assertThat(page.get("rollouts").get(0).get("experiment").asText()).isEqualTo("grpo");
            HttpResponse<InputStream> snapshots = get.apply("/tables/grpo/snapshots");
            assertThat(snapshots.statusCode()).isEqualTo(200);
            assertThat(HttpEndpoint.JSON
                            .readTree(json(snapshots))
                            .get("snapshots")
                            .isArray())
                    .isTrue();
            Map<String, JsonNode> listed = new HashMap<>();
            HttpEndpoint.JSON
                    .readTree(json(get.apply("/tables")))
                    .forEach(t -> listed.put(t.get("table").asText(), t));
            assertThat(listed).containsOnlyKeys("grpo", "ppo");
            assertThat(listed.get("grpo").get("rows").asLong()).isEqualTo(20);
            assertThat(listed.get("grpo").get("pending_generations").asInt()).isEqualTo(1);
            assertThat(listed.get("ppo").get("rows").asLong()).isZero();
        }
    }
}
