package dev.rolloutingest.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real Azure Blob Storage API: Azurite's blob service as a child process (node), on a free loopback port, its
 * data in a folder, with one container created (Lance does not create containers). Killed with this JVM.
 *
 * <p>{@link #startWithEntraId} serves HTTPS (a certificate made for the run, trusted through {@link #trustStore})
 * and also takes Entra ID bearer tokens: Azurite's "basic" OAuth checks a token's issuer, audience and lifetime but
 * not its signature, so a test can hand out tokens of its own.
 */
public final class EmbeddedAzurite implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(EmbeddedAzurite.class);

    /** Azurite's one account and its well-known key, published in Azurite's README: nothing secret. */
    public static final String ACCOUNT = "devstoreaccount1";

    public static final String ACCOUNT_KEY =
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    private static final String API_VERSION = "2021-08-06";

    private final Process process;
    private final Thread reaper;
    private final int port;
    private final String container;
    private final Path logFile;
    private final Path trustStore;
    private final HttpClient http;

    private EmbeddedAzurite(
            Process process,
            int port,
            String container,
            Path logFile,
            SelfSignedCertificate certificate,
            Path trustStore) {
        this.process = process;
        this.reaper = ChildProcesses.reapOnExit(process, "azurite-reaper");
        this.port = port;
        this.container = container;
        this.logFile = logFile;
        this.trustStore = trustStore;
        HttpClient.Builder http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
        if (certificate != null) {
            http.sslContext(certificate.trustingContext());
        }
        this.http = http.build();
    }

    /**
     * Installs Azurite from npm if this machine lacks it ({@link AzuriteInstall}), starts its blob service with its
     * data in {@code dataDir} and creates {@code container}.
     *
     * @throws AzuriteInstall.Unavailable where node or npm is missing or the npm registry cannot be reached
     */
    public static EmbeddedAzurite start(Path dataDir, String container) {
        return start(dataDir, container, false);
    }

    /**
     * As {@link #start(Path, String)}, on HTTPS with a certificate made for this run for 127.0.0.1, taking Entra ID
     * bearer tokens besides the account key (Azurite's {@code --oauth basic}).
     */
    public static EmbeddedAzurite startWithEntraId(Path dataDir, String container) {
        return start(dataDir, container, true);
    }

    private static EmbeddedAzurite start(Path dataDir, String container, boolean entraId) {
        long started = System.nanoTime();
        Path main = AzuriteInstall.blobMain();
        int port = FreePorts.next();
        Path data = dataDir.toAbsolutePath();
        Path logFile = data.resolve("azurite.log");
        SelfSignedCertificate certificate = null;
        Path trustStore = null;
        Process process;
        try {
            Files.createDirectories(data);
            List<String> command = new java.util.ArrayList<>(List.of(
                    "node",
                    main.toString(),
                    "--blobHost",
                    "127.0.0.1",
                    "--blobPort",
                    Integer.toString(port),
                    "--location",
                    data.resolve("blobs").toString(),
                    // Lance's client and the Java SDK may name a newer API version than this Azurite knows.
                    "--skipApiVersionCheck",
                    // Azurite reports usage to Azure Monitor unless told not to: from a machine offline it keeps the
                    // reports in its temp folder and its stop waits ~20 s on sending them.
                    "--disableTelemetry",
                    "--silent"));
            if (entraId) {
                certificate = SelfSignedCertificate.create(data.resolve("azurite.pfx"));
                trustStore = certificate.writeTrustStore(data.resolve("azurite-trust.p12"));
                command.addAll(List.of(
                        "--cert",
                        certificate.keystore().toString(),
                        "--pwd",
                        SelfSignedCertificate.PASSWORD,
                        "--oauth",
                        "basic"));
            }
            ProcessBuilder builder =
                    new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(logFile.toFile());
            Path tmp = Files.createDirectories(data.resolve("tmp"));
            builder.environment().put("TMPDIR", tmp.toString()); // what it writes outside the blobs stays in its folder
            process = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start Azurite (" + main + ")", e);
        }
        EmbeddedAzurite azurite = new EmbeddedAzurite(process, port, container, logFile, certificate, trustStore);
        try {
            azurite.awaitReady(Duration.ofSeconds(60));
            azurite.createContainer(container);
        } catch (RuntimeException e) {
            azurite.close();
            throw e;
        }
        log.info(
                "Azure Blob API (Azurite) up at {} (container {}, data {}) in {} ms",
                azurite.endpoint(),
                container,
                data,
                (System.nanoTime() - started) / 1_000_000);
        return azurite;
    }

    private void awaitReady(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        "Azurite exited with " + process.exitValue() + " during start; log: " + logTail());
            }
            try {
                // Any answer, 403 to an unsigned listing included, means it listens.
                http.send(
                        HttpRequest.newBuilder(URI.create(endpoint() + "?comp=list"))
                                .timeout(Duration.ofSeconds(2))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.discarding());
                return;
            } catch (IOException notYet) {
                sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for Azurite", e);
            }
        }
        throw new IllegalStateException("Azurite not ready within " + timeout + "; log: " + logTail());
    }

    /** Creates a container (fine when it exists), signed with the account key as any Azure client would. */
    public void createContainer(String name) {
        String date = DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now(ZoneOffset.UTC));
        // Shared Key: verb, eleven standard headers (all empty here), the x-ms- headers, then the resource (an
        // emulator's path-style URL names the account twice).
        String toSign = "PUT\n\n\n\n\n\n\n\n\n\n\n\n"
                + "x-ms-date:" + date + "\nx-ms-version:" + API_VERSION + "\n"
                + "/" + ACCOUNT + "/" + ACCOUNT + "/" + name + "\nrestype:container";
        try {
            HttpResponse<String> response = http.send(
                    HttpRequest.newBuilder(URI.create(endpoint() + "/" + name + "?restype=container"))
                            .header("x-ms-date", date)
                            .header("x-ms-version", API_VERSION)
                            .header("Authorization", "SharedKey " + ACCOUNT + ":" + sign(toSign))
                            .PUT(HttpRequest.BodyPublishers.noBody())
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 201 && response.statusCode() != 409) {
                throw new IllegalStateException("Creating container " + name + " answered HTTP " + response.statusCode()
                        + ": " + response.body());
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Creating container " + name + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String sign(String toSign) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(Base64.getDecoder().decode(ACCOUNT_KEY), "HmacSHA256"));
            return Base64.getEncoder().encodeToString(mac.doFinal(toSign.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The blob service URL, account included: {@code http://127.0.0.1:PORT/devstoreaccount1} (https with TLS). */
    public String endpoint() {
        return (trustStore == null ? "http" : "https") + "://127.0.0.1:" + port + "/" + ACCOUNT;
    }

    /** The PKCS12 store (password {@link SelfSignedCertificate#PASSWORD}) trusting this server; null on HTTP. */
    public Path trustStore() {
        return trustStore;
    }

    public String container() {
        return container;
    }

    /** {@code az://container/prefix}. */
    public String uri(String prefix) {
        return "az://" + container + "/" + prefix;
    }

    /**
     * Storage options without a credential: the account, this server's endpoint, plain HTTP. Not
     * {@code azure_storage_use_emulator}: with it lance-core goes to port 10000 whatever {@code azure_endpoint} says.
     */
    public Map<String, String> endpointOptions() {
        return Map.of("azure_storage_account_name", ACCOUNT, "azure_endpoint", endpoint(), "azure_allow_http", "true");
    }

    /** The storage options Lance (and the project's own Azure client) need to talk to this server: the account key. */
    public Map<String, String> lanceStorageOptions() {
        Map<String, String> options = new java.util.HashMap<>(endpointOptions());
        options.put("azure_storage_account_key", ACCOUNT_KEY);
        return Map.copyOf(options);
    }

    public long pid() {
        return process.pid();
    }

    private String logTail() {
        try {
            List<String> lines = Files.readAllLines(logFile);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log at " + logFile + ")";
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        ChildProcesses.stop(process, reaper);
    }
}
