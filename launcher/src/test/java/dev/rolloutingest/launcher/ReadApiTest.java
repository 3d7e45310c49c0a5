package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ReadApiTest {
    private RolloutTable table;
    private HttpEndpoint http;
    private final HttpClient client = HttpClient.newHttpClient();
    private Rollout first;

    @BeforeEach
    void serve() {
        Path dir = Path.of("target", "read-api", UUID.randomUUID().toString()).toAbsolutePath();
        // Cap of 2 pending generations per shard: the third generation below pushes reads to 503.
        table = RolloutTable.createOrOpen(
                TableLocation.local(dir),
                TableSettings.DEFAULTS
                        .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                        .with(TableSettings.PENDING_MAX_GENERATIONS, 2),
                new SimpleMeterRegistry());
        RolloutGenerator generator = new RolloutGenerator("exp-a", 64, 5);
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            Rollout r = generator.rollout(i, 0);
            if (i >= 6) {
                r.setExperiment("exp-b");
            }
            rows.add(new RolloutRow(r, 0, i, Instant.now()));
        }
        first = rows.get(0).rollout();
        table.generations().write("rollouts", 0, 0, 9, rows, 1000);
        http = new HttpEndpoint("127.0.0.1", 0);
        new ReadApi(table).mount(http);
        http.start();
    }

    @AfterEach
    void stop() {
        http.close();
        table.close();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return client.send(
                HttpRequest.newBuilder(URI.create(http.baseUrl() + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aSnapshotReadSeesOnlyTheSnapshot() throws Exception {
        table.snapshots().create("s1", TableSnapshots.Cut.everythingSealed("rollouts"));
        Rollout later = new RolloutGenerator("exp-c", 64, 6).rollout(100, 0);
        table.generations().write("rollouts", 0, 10, 10, List.of(new RolloutRow(later, 0, 10, Instant.now())), 100);

        assertThat(get("/rollouts/" + later.getRecordId()).statusCode()).isEqualTo(200);
        assertThat(get("/rollouts/" + later.getRecordId() + "?snapshot=s1").statusCode())
                .isEqualTo(404);
        assertThat(get("/rollouts/" + first.getRecordId() + "?snapshot=s1").statusCode())
                .isEqualTo(200);
        JsonNode page = HttpEndpoint.JSON.readTree(
                get("/rollouts?snapshot=s1&limit=100").body());
        assertThat(page.get("count").asInt()).isEqualTo(10);
        assertThat(HttpEndpoint.JSON
                        .readTree(get("/rollouts?limit=100").body())
                        .get("count")
                        .asInt())
                .isEqualTo(11);
        assertThat(get("/rollouts/x?snapshot=nope").statusCode()).isEqualTo(404);
        assertThat(get("/rollouts?snapshot=..%2Fbad").statusCode()).isEqualTo(400);
        assertThat(get("/rollouts/x?limit=3").statusCode()).isEqualTo(400);
        JsonNode listed = HttpEndpoint.JSON.readTree(get("/snapshots").body());
        assertThat(listed.get("snapshots").get(0).get("name").asText()).isEqualTo("s1");
        assertThat(listed.get("snapshots")
                        .get(0)
                        .get("offsets")
                        .get("rollouts:0")
                        .asLong())
                .isEqualTo(10);
    }

    @Test
    void getReturnsTheRolloutAndAnUnknownIdIs404() throws Exception {
        HttpResponse<String> found = get("/rollouts/" + first.getRecordId());
        assertThat(found.statusCode()).isEqualTo(200);
        JsonNode json = HttpEndpoint.JSON.readTree(found.body());
        assertThat(json.get("record_id").asText()).isEqualTo(first.getRecordId());
        assertThat(json.get("payload_bytes").asInt()).isEqualTo(64);
        assertThat(json.get("source_offset").asLong()).isZero();
        HttpResponse<String> missing = get("/rollouts/nope");
        assertThat(missing.statusCode()).isEqualTo(404);
        assertThat(HttpEndpoint.JSON.readTree(missing.body()).get("error").asText())
                .contains("nope");
    }

    @Test
    void thePayloadDownloadsAsBytes() throws Exception {
        HttpResponse<byte[]> payload = client.send(
                HttpRequest.newBuilder(URI.create(http.baseUrl() + "/rollouts/" + first.getRecordId() + "/payload"))
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(payload.statusCode()).isEqualTo(200);
        assertThat(payload.headers().firstValue("Content-Type")).contains("application/octet-stream");
        assertThat(ByteBuffer.wrap(payload.body())).isEqualTo(first.getBinaryPayload());
    }

    @Test
    void listFiltersPagesAndRejectsBadParameters() throws Exception {
        JsonNode b = HttpEndpoint.JSON.readTree(
                get("/rollouts?experiment=exp-b&limit=10").body());
        assertThat(b.get("count").asInt()).isEqualTo(4);
        JsonNode page = HttpEndpoint.JSON.readTree(
                get("/rollouts?experiment=exp-a&limit=4&offset=4").body());
        assertThat(page.get("count").asInt()).isEqualTo(2);
        assertThat(get("/rollouts?limit=0").statusCode()).isEqualTo(400);
        assertThat(get("/rollouts?limit=ten").statusCode()).isEqualTo(400);
        assertThat(get("/rollouts?colour=red").statusCode()).isEqualTo(400);
    }

    @Test
    void everyValidUtf8RecordIdIsReadableThroughTheApi() throws Exception {
        List<String> ids = List.of(
                "emoji-\uD83D\uDE00",
                "nul-\u0000-x",
                "cjk-\u4E2D\u6587",
                "rtl-\u200F\u05E9",
                "sql-'; DROP TABLE t; --",
                "url-a/b?c=d&e#f",
                "long-" + "z".repeat(10_000) + "\uD83D\uDE80");
        RolloutGenerator generator = new RolloutGenerator("exp-c", 8, 9);
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < ids.size(); i++) {
            Rollout r = generator.rollout(i, 0);
            r.setRecordId(ids.get(i));
            r.setExperiment(ids.get(i));
            rows.add(new RolloutRow(r, 0, 100 + i, Instant.now()));
        }
        table.generations().write("rollouts", 0, 100, 100 + ids.size() - 1, rows, 100);
        for (String id : ids) {
            String encoded = java.net.URLEncoder.encode(id, java.nio.charset.StandardCharsets.UTF_8)
                    .replace("+", "%20");
            HttpResponse<String> found = get("/rollouts/" + encoded);
            assertThat(found.statusCode())
                    .as(id.substring(0, Math.min(20, id.length())))
                    .isEqualTo(200);
            assertThat(HttpEndpoint.JSON.readTree(found.body()).get("record_id").asText())
                    .isEqualTo(id);
            JsonNode listed = HttpEndpoint.JSON.readTree(
                    get("/rollouts?experiment=" + encoded).body());
            assertThat(listed.get("count").asInt()).isEqualTo(1);
        }
    }

    @Test
    void aServerSideFailureAnswersWithACorrelationIdAndNoInternals() throws Exception {
        // The generation's files are gone: its seal says it exists, reading it fails inside lance-core.
        Path generations = Path.of(table.location().uri()).resolve("_mem_wal");
        dev.rolloutingest.embedded.FileTrees.deleteRecursively(generations);
        HttpResponse<String> response = get("/rollouts/" + first.getRecordId());
        assertThat(response.statusCode()).isEqualTo(503);
        JsonNode body = HttpEndpoint.JSON.readTree(response.body());
        assertThat(body.get("correlation_id").asText()).isNotBlank();
        assertThat(body.get("error").asText())
                .contains("generation 10")
                .doesNotContain(table.location().uri());
        assertThat(response.body())
                .doesNotContain(table.location().uri())
                .doesNotContain("LanceError")
                .doesNotContain("_mem_wal");
    }

    @Test
    void readsOverThePendingHardCapAnswer503() throws Exception {
        RolloutGenerator generator = new RolloutGenerator("exp-a", 8, 6);
        for (long offset = 10; offset < 12; offset++) {
            table.generations()
                    .write(
                            "rollouts",
                            0,
                            offset,
                            offset,
                            List.of(new RolloutRow(generator.rollout(offset, 0), 0, offset, Instant.now())),
                            10);
        }
        HttpResponse<String> response = get("/rollouts/" + first.getRecordId());
        assertThat(response.statusCode()).isEqualTo(503);
        assertThat(response.body()).contains("pending generations").contains("ROLLOUT_WAL_PENDING_MAX_GENERATIONS");
        assertThat(get("/rollouts?limit=1").statusCode()).isEqualTo(503);
    }
}
