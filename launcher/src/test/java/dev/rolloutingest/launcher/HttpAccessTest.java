package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.Observability;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.net.ssl.SSLContext;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Bearer tokens, roles, TLS and the refusals at start, through a real endpoint serving the real read API. */
class HttpAccessTest {
    private static final String READ_TOKEN = "read-token-0123456789abcdef";
    private static final String ADMIN_TOKEN = "admin-token-0123456789abcdef";

    private final Path dir =
            Path.of("target", "http-access", UUID.randomUUID().toString()).toAbsolutePath();
    private final HttpClient client = HttpClient.newHttpClient();
    private RolloutTable table;
    private String recordId;
    private HttpEndpoint http;

    @BeforeEach
    void table() {
        table = RolloutTable.createOrOpen(
                TableLocation.local(dir.resolve("table")), TableSettings.DEFAULTS, new SimpleMeterRegistry());
        var rollout = new RolloutGenerator("exp-a", 64, 5).rollout(0, 0);
        recordId = rollout.getRecordId();
        table.generations().write("rollouts", 0, 0, 0, List.of(new RolloutRow(rollout, 0, 0, Instant.now())), 100);
    }

    @AfterEach
    void stop() {
        if (http != null) {
            http.close();
        }
        table.close();
    }

    private HttpEndpoint serve(Map<String, String> env) {
        http = new HttpEndpoint("127.0.0.1", 0, HttpAccess.fromEnv(env));
        Observability.mountMetrics(http, Observability.prometheus("test"));
        http.route("/health", HttpAccess.Access.PUBLIC, exchange -> HttpEndpoint.Response.json(200, Map.of()));
        http.route("/admin-only", HttpAccess.Access.ADMIN, exchange -> HttpEndpoint.Response.json(200, Map.of()));
        new ReadApi(table).mount(http);
        return http.start();
    }

    private static Map<String, String> tokens() {
        return Map.of("HTTP_AUTH_TOKENS", "trainer:read:" + READ_TOKEN + ",oncall:admin:" + ADMIN_TOKEN);
    }

    private HttpResponse<String> call(String method, String path, String token) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(http.baseUrl() + path))
                .method(method, HttpRequest.BodyPublishers.noBody());
        if (token != null) {
            request.header("Authorization", "Bearer " + token);
        }
        return client.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void everyProtectedRouteAnswers401WithoutATokenOrWithAWrongOneAndSaysNothingMore() throws Exception {
        serve(tokens());
        for (String path :
                List.of("/rollouts/" + recordId, "/rollouts?experiment=exp-a", "/snapshots", "/admin-only")) {
            HttpResponse<String> none = call("GET", path, null);
            assertThat(none.statusCode()).as(path).isEqualTo(401);
            assertThat(none.headers().firstValue("WWW-Authenticate"))
                    .hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
            HttpResponse<String> wrong = call("GET", path, "not-a-token-0123456789abcdef");
            assertThat(wrong.statusCode()).as(path).isEqualTo(401);
            assertThat(wrong.headers().firstValue("WWW-Authenticate"))
                    .hasValueSatisfying(v -> assertThat(v).contains("invalid_token"));
            for (HttpResponse<String> refused : List.of(none, wrong)) {
                assertThat(refused.body())
                        .doesNotContain(dir.toString(), READ_TOKEN, ADMIN_TOKEN, "not-a-token", "Exception", "at ");
            }
        }
        assertThat(call("DELETE", "/rollouts/" + recordId, null).statusCode()).isEqualTo(401);
    }

    @Test
    void aReadTokenReadsButIsRefused403WhereTheAdminRoleIsNeededWhichTheAdminTokenHas() throws Exception {
        serve(tokens());
        assertThat(call("GET", "/rollouts/" + recordId, READ_TOKEN).statusCode())
                .isEqualTo(200);
        assertThat(call("GET", "/snapshots", READ_TOKEN).statusCode()).isEqualTo(200);
        HttpResponse<String> forbidden = call("GET", "/admin-only", READ_TOKEN);
        assertThat(forbidden.statusCode()).isEqualTo(403);
        assertThat(forbidden.body()).contains("trainer").contains("admin").doesNotContain(READ_TOKEN);
        // A change through the read API needs the admin role: the read token is refused before the route runs.
        assertThat(call("DELETE", "/rollouts/" + recordId, READ_TOKEN).statusCode())
                .isEqualTo(403);
        assertThat(call("GET", "/admin-only", ADMIN_TOKEN).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/rollouts/" + recordId, ADMIN_TOKEN).statusCode())
                .isEqualTo(200);
        // The route itself answers the admin (this read API has no Kafka to publish deletes to).
        assertThat(call("DELETE", "/rollouts/" + recordId, ADMIN_TOKEN).statusCode())
                .isEqualTo(405);
        assertThat(call("GET", "/no-such-route", ADMIN_TOKEN).statusCode()).isEqualTo(404);
        assertThat(call("GET", "/no-such-route", null).statusCode()).isEqualTo(404);
    }

    @Test
    void healthAndMetricsStayOpenUnlessMetricsAreProtected() throws Exception {
        serve(tokens());
        assertThat(call("GET", "/health", null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/metrics", null).statusCode()).isEqualTo(200);
        http.close();

        Map<String, String> env = new HashMap<>(tokens());
        env.put("HTTP_AUTH_METRICS", "true");
        serve(env);
        assertThat(call("GET", "/health", null).statusCode()).isEqualTo(200);
        assertThat(call("GET", "/metrics", null).statusCode()).isEqualTo(401);
        assertThat(call("GET", "/metrics", READ_TOKEN).statusCode()).isEqualTo(200);
    }

    @Test
    void aTokenInTheFileIsRotatedWithoutARestart() throws Exception {
        Path file = dir.resolve("tokens");
        Files.createDirectories(dir);
        Files.writeString(file, "# name role token\ntrainer read " + READ_TOKEN + "\n");
        serve(Map.of("HTTP_AUTH_TOKENS_FILE", file.toString()));
        assertThat(call("GET", "/rollouts/" + recordId, READ_TOKEN).statusCode())
                .isEqualTo(200);

        String next = "rotated-token-0123456789abcdef";
        Files.writeString(file, "trainer read " + next + "\n");
        Files.setLastModifiedTime(file, FileTime.from(Instant.now().plusSeconds(5)));
        long deadline = System.currentTimeMillis() + 10_000;
        while (call("GET", "/rollouts/" + recordId, READ_TOKEN).statusCode() != 401) {
            assertThat(System.currentTimeMillis())
                    .as("the old token still works")
                    .isLessThan(deadline);
            Thread.sleep(200);
        }
        assertThat(call("GET", "/rollouts/" + recordId, next).statusCode()).isEqualTo(200);

        // A broken file keeps the tokens that worked (and logs an error) rather than locking everyone out.
        Files.writeString(file, "trainer read\n");
        Files.setLastModifiedTime(file, FileTime.from(Instant.now().plusSeconds(10)));
        Thread.sleep(1_200);
        assertThat(call("GET", "/rollouts/" + recordId, next).statusCode()).isEqualTo(200);
    }

    @Test
    void withAKeystoreTheEndpointServesHttpsOnly() throws Exception {
        Path keystore = dir.resolve("http.p12");
        Files.createDirectories(dir);
        SSLContext tls = SelfSignedTls.create(keystore, dir.resolve("http.pem"));
        Map<String, String> env = new HashMap<>(tokens());
        env.put("HTTP_TLS_KEYSTORE_PATH", keystore.toString());
        env.put("HTTP_TLS_KEYSTORE_PASSWORD", SelfSignedTls.PASSWORD);
        serve(env);
        assertThat(http.baseUrl()).startsWith("https://");

        HttpClient https = HttpClient.newBuilder().sslContext(tls).build();
        HttpResponse<String> read = https.send(
                HttpRequest.newBuilder(URI.create(http.baseUrl() + "/rollouts/" + recordId))
                        .header("Authorization", "Bearer " + READ_TOKEN)
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(https.send(
                                HttpRequest.newBuilder(URI.create(http.baseUrl() + "/rollouts/" + recordId))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString())
                        .statusCode())
                .isEqualTo(401);
        String plain = http.baseUrl().replace("https://", "http://");
        assertThatThrownBy(() -> client.send(
                        HttpRequest.newBuilder(URI.create(plain + "/health")).build(),
                        HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(java.io.IOException.class);
    }

    @Test
    void servingBeyondLoopbackWithoutTokensIsRefusedAtStartUnlessExplicitlyAllowed() {
        assertThatThrownBy(() -> new HttpEndpoint("0.0.0.0", 0, HttpAccess.fromEnv(Map.of())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(HttpAccess.TOKENS)
                .hasMessageContaining(HttpAccess.ALLOW_UNAUTHENTICATED);
        assertThatThrownBy(() -> new HttpEndpoint("0.0.0.0", 0)).isInstanceOf(ConfigException.class);
        new HttpEndpoint("0.0.0.0", 0, HttpAccess.fromEnv(Map.of("HTTP_ALLOW_UNAUTHENTICATED", "true"))).close();
        new HttpEndpoint("0.0.0.0", 0, HttpAccess.fromEnv(tokens())).close();
    }

    @Test
    void badTokenSettingsFailAtStartNamingTheKeyButNeverTheSecret() {
        assertThatThrownBy(() -> HttpAccess.fromEnv(Map.of("HTTP_AUTH_TOKENS", "trainer:reader:" + READ_TOKEN)))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(HttpAccess.TOKENS)
                .hasMessageContaining("read, admin")
                .hasMessageNotContaining(READ_TOKEN);
        assertThatThrownBy(() -> HttpAccess.fromEnv(Map.of("HTTP_AUTH_TOKENS", "trainer:read:short")))
                .hasMessageContaining("16 characters")
                .hasMessageNotContaining("short,");
        assertThatThrownBy(() -> HttpAccess.fromEnv(
                        Map.of("HTTP_AUTH_TOKENS_FILE", dir.resolve("absent").toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(HttpAccess.TOKENS_FILE);
        assertThatThrownBy(() -> HttpAccess.fromEnv(Map.of("HTTP_AUTH_METRICS", "true")))
                .hasMessageContaining(HttpAccess.PROTECT_METRICS);
        assertThatThrownBy(() -> HttpAccess.fromEnv(
                        Map.of("HTTP_TLS_KEYSTORE_PATH", dir.resolve("none.p12").toString())))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(HttpAccess.KEYSTORE_PATH);
    }
}
