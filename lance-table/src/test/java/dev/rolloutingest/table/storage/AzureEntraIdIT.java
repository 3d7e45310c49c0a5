package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.rolloutingest.embedded.AzuriteInstall;
import dev.rolloutingest.embedded.ChildJvm;
import dev.rolloutingest.embedded.EmbeddedAzurite;
import dev.rolloutingest.embedded.SelfSignedCertificate;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Entra ID on Azurite over HTTPS (Azurite checks each token's issuer, audience and lifetime): the Azure store with no
 * key, SAS or token in its options takes its credential from the default Azure chain, here the managed identity an
 * App Service or Functions host offers its apps (IDENTITY_ENDPOINT, IDENTITY_HEADER) served on loopback; a token given
 * as azure_storage_token carries a whole table cycle, lance-core included. Each run is a JVM of its own: the chain
 * reads the process environment, and the JVM's trust store is set at its start.
 */
class AzureEntraIdIT {
    private static final Path ROOT = Path.of("target", "it-azure-entra").toAbsolutePath();
    private static final String IDENTITY_HEADER = "identity-header-" + UUID.randomUUID();

    private static EmbeddedAzurite azurite;
    private static HttpServer identityEndpoint;
    private static final List<String> tokenRequests = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws IOException {
        try {
            azurite = EmbeddedAzurite.startWithEntraId(ROOT.resolve("azurite"), "rollouts");
        } catch (AzuriteInstall.Unavailable e) {
            Assumptions.abort("Azure tests skipped: " + e.getMessage());
        }
        identityEndpoint = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        identityEndpoint.createContext("/msi/token", exchange -> {
            String header = exchange.getRequestHeaders().getFirst("X-IDENTITY-HEADER");
            tokenRequests.add(exchange.getRequestURI().getQuery());
            boolean allowed = IDENTITY_HEADER.equals(header);
            long now = System.currentTimeMillis() / 1000;
            byte[] body = (allowed
                            ? "{\"access_token\":\"" + entraToken(now) + "\",\"expires_on\":\"" + (now + 3600)
                                    + "\",\"resource\":\"https://storage.azure.com\",\"token_type\":\"Bearer\","
                                    + "\"client_id\":\"00000000-0000-0000-0000-000000000001\"}"
                            : "{\"error\":\"invalid_request\"}")
                    .getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(allowed ? 200 : 400, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        identityEndpoint.start();
    }

    @AfterAll
    static void stop() {
        if (identityEndpoint != null) {
            identityEndpoint.stop(0);
        }
        if (azurite != null) {
            azurite.close();
        }
    }

    /** An Entra ID access token for Azure Storage as Azurite reads one: issuer, audience, lifetime; unsigned. */
    private static String entraToken(long now) {
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        String header = "{\"alg\":\"RS256\",\"typ\":\"JWT\"}";
        String claims = "{\"aud\":\"https://storage.azure.com\",\"iss\":\"https://sts.windows.net/"
                + "00000000-0000-0000-0000-00000000000a/\",\"iat\":" + (now - 60) + ",\"nbf\":" + (now - 60)
                + ",\"exp\":" + (now + 3600) + ",\"oid\":\"00000000-0000-0000-0000-00000000000b\"}";
        return b64.encodeToString(header.getBytes(StandardCharsets.UTF_8)) + "."
                + b64.encodeToString(claims.getBytes(StandardCharsets.UTF_8)) + ".c2lnbmF0dXJl";
    }

    /** Runs {@link AzureStoreProbe} in a JVM of its own with {@code env}; returns its exit code and output. */
    private static Map.Entry<Integer, String> probe(String name, Map<String, String> env) throws Exception {
        return run(AzureStoreProbe.class, name, List.of(azurite.endpoint(), "az://rollouts/" + name), env);
    }

    private static Map.Entry<Integer, String> run(
            Class<?> main, String name, List<String> args, Map<String, String> env) throws Exception {
        Path log = ROOT.resolve(name + ".log");
        Files.deleteIfExists(log);
        try (ChildJvm jvm = ChildJvm.start(
                main,
                args,
                env,
                log,
                "-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"),
                "-Djavax.net.ssl.trustStore=" + azurite.trustStore(),
                "-Djavax.net.ssl.trustStorePassword=" + SelfSignedCertificate.PASSWORD,
                "-Djavax.net.ssl.trustStoreType=PKCS12")) {
            int exit = jvm.waitFor(180);
            return Map.entry(exit, Files.readString(log));
        }
    }

    @Test
    void withNoCredentialInTheOptionsTheManagedIdentityOfTheHostAuthorisesEveryFileOperation() throws Exception {
        Map.Entry<Integer, String> run = probe(
                "managed-" + UUID.randomUUID(),
                Map.of(
                        "IDENTITY_ENDPOINT",
                        "http://127.0.0.1:" + identityEndpoint.getAddress().getPort() + "/msi/token",
                        "IDENTITY_HEADER",
                        IDENTITY_HEADER));
        assertThat(run.getKey()).as(run.getValue()).isZero();
        assertThat(run.getValue()).contains("probe read [1, 2], left [data/copied]");
        assertThat(tokenRequests).as("the token was asked for Azure Storage").anySatisfy(q -> assertThat(q)
                .contains("resource=https://storage.azure.com"));
    }

    /** A token given in the options (azure_storage_token) carries lance-core and the project's files alike. */
    @Test
    void aBearerTokenInTheOptionsCarriesAWholeTableCycleOnHttps() throws Exception {
        String name = "token-" + UUID.randomUUID();
        Map.Entry<Integer, String> run = run(
                dev.rolloutingest.table.AzureTableProbe.class,
                name,
                List.of(azurite.endpoint(), "az://rollouts/" + name, entraToken(System.currentTimeMillis() / 1000)),
                Map.of());
        assertThat(run.getKey()).as(run.getValue()).isZero();
        assertThat(run.getValue()).contains("probe rows 15, pending 0, collected 3");
    }

    /**
     * The identity endpoint refuses (a wrong identity header): the store fails rather than write unauthorised.
     * (Never with no identity endpoint at all: the chain would then probe the cloud's metadata address.)
     */
    @Test
    void aHostIdentityThatRefusesFailsTheStoreInsteadOfGoingAnonymous() throws Exception {
        Map.Entry<Integer, String> run = probe(
                "refused-" + UUID.randomUUID(),
                Map.of(
                        "IDENTITY_ENDPOINT",
                        "http://127.0.0.1:" + identityEndpoint.getAddress().getPort() + "/msi/token",
                        "IDENTITY_HEADER",
                        "not-the-header"));
        assertThat(run.getKey()).as(run.getValue()).isEqualTo(1);
        assertThat(run.getValue())
                .contains("RolloutTableException$StorageAccess")
                .doesNotContain("probe read");
    }
}
