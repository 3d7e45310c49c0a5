package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.rolloutingest.table.TableLocation;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The credentials the S3 store signs its requests with, read off the requests a real AWS SDK client sends to a
 * loopback HTTP server that answers as S3 (no such key) and as STS (a web identity's temporary keys) would.
 */
class S3CredentialsTest {
    private static final List<String> SYSTEM_PROPERTIES = List.of(
            "aws.accessKeyId",
            "aws.secretAccessKey",
            "aws.sessionToken",
            "aws.webIdentityTokenFile",
            "aws.roleArn",
            "aws.roleSessionName",
            "aws.region",
            "aws.endpointUrlSts");

    private final List<Map<String, String>> requests = new CopyOnWriteArrayList<>();
    private final Map<String, String> savedProperties = new HashMap<>();
    private HttpServer server;

    @BeforeEach
    void startServer() throws IOException {
        for (String name : SYSTEM_PROPERTIES) {
            savedProperties.put(name, System.clearProperty(name));
        }
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::answer);
        server.start();
    }

    @AfterEach
    void stopServer() {
        server.stop(0);
        savedProperties.forEach((name, value) -> {
            if (value == null) {
                System.clearProperty(name);
            } else {
                System.setProperty(name, value);
            }
        });
    }

    private void answer(HttpExchange exchange) throws IOException {
        Map<String, String> seen = new HashMap<>();
        exchange.getRequestHeaders().forEach((name, values) -> seen.put(name.toLowerCase(), values.get(0)));
        seen.put("method", exchange.getRequestMethod());
        seen.put("body", new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
        requests.add(seen);
        boolean sts =
                exchange.getRequestMethod().equals("POST") && seen.get("body").contains("AssumeRoleWithWebIdentity");
        String body = sts
                ? "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                        + "<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAWEBIDENTITY</AccessKeyId>"
                        + "<SecretAccessKey>web-secret</SecretAccessKey><SessionToken>web-identity-session</SessionToken>"
                        + "<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
                        + "<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/ingest/s</Arn>"
                        + "<AssumedRoleId>AROAEXAMPLE:s</AssumedRoleId></AssumedRoleUser>"
                        + "</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>r1</RequestId>"
                        + "</ResponseMetadata></AssumeRoleWithWebIdentityResponse>"
                : "<Error><Code>NoSuchKey</Code><Message>none</Message></Error>";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().add("Content-Type", "application/xml");
        exchange.sendResponseHeaders(sts ? 200 : 404, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    private String endpoint() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Reads a missing seal file through the store and returns the S3 request it sent. */
    private Map<String, String> s3RequestOf(Map<String, String> options) {
        Map<String, String> all = new HashMap<>(options);
        all.put("aws_endpoint", endpoint());
        all.put("aws_region", "us-east-1");
        all.put("allow_http", "true");
        try (ObjectStore store = ObjectStores.open(new TableLocation("s3://rollouts/table", all))) {
            assertThat(store.get("_seals/shard/seal.json")).isNull();
        }
        return requests.stream()
                .filter(r -> r.get("method").equals("GET"))
                .reduce((first, second) -> second)
                .orElseThrow();
    }

    @Test
    void aSessionTokenInTheOptionsSignsTheSealFilesRequests() {
        Map<String, String> request = s3RequestOf(Map.of(
                "aws_access_key_id", "ASIATEMPORARY",
                "aws_secret_access_key", "temporary-secret",
                "aws_session_token", "temporary-session"));
        assertThat(request.get("x-amz-security-token")).isEqualTo("temporary-session");
        assertThat(request.get("authorization")).contains("Credential=ASIATEMPORARY/");
    }

    @Test
    void keysWithoutATokenSendNoToken() {
        Map<String, String> request = s3RequestOf(Map.of(
                "aws_access_key_id", "AKIALONGTERM",
                "aws_secret_access_key", "long-term-secret"));
        assertThat(request).doesNotContainKey("x-amz-security-token");
        assertThat(request.get("authorization")).contains("Credential=AKIALONGTERM/");
    }

    @Test
    void withoutKeysInTheOptionsTheDefaultChainsCredentialsSignTheRequests() {
        System.setProperty("aws.accessKeyId", "ASIAFROMCHAIN");
        System.setProperty("aws.secretAccessKey", "chain-secret");
        System.setProperty("aws.sessionToken", "chain-session");
        Map<String, String> request = s3RequestOf(Map.of());
        assertThat(request.get("x-amz-security-token")).isEqualTo("chain-session");
        assertThat(request.get("authorization")).contains("Credential=ASIAFROMCHAIN/");
    }

    @Test
    void theDefaultChainTakesAWebIdentityTokenAsIrsaGivesIt(@TempDir Path dir) throws IOException {
        Path tokenFile = Files.writeString(dir.resolve("token"), "projected-service-account-token");
        System.setProperty("aws.webIdentityTokenFile", tokenFile.toString());
        System.setProperty("aws.roleArn", "arn:aws:iam::123456789012:role/ingest");
        System.setProperty("aws.roleSessionName", "rollout-ingest");
        System.setProperty("aws.region", "us-east-1");
        System.setProperty("aws.endpointUrlSts", endpoint());
        Map<String, String> request = s3RequestOf(Map.of());
        assertThat(requests)
                .as("the role was assumed with the token file's contents")
                .anySatisfy(r -> assertThat(r.get("body"))
                        .contains("AssumeRoleWithWebIdentity")
                        .contains("projected-service-account-token"));
        assertThat(request.get("x-amz-security-token")).isEqualTo("web-identity-session");
        assertThat(request.get("authorization")).contains("Credential=ASIAWEBIDENTITY/");
    }
}
