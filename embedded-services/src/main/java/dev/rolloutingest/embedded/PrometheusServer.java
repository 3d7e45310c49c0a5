package dev.rolloutingest.embedded;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * A real Prometheus server as a child process (the binary of Debian's {@code prometheus} package, or any on
 * the PATH): scrapes what its config names, evaluates its rules, answers its HTTP API on a free loopback port.
 */
public final class PrometheusServer implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final int port;
    private final Path logFile;
    private final Thread shutdownHook;
    private final HttpClient http = HttpClient.newHttpClient();

    private PrometheusServer(Process process, int port, Path logFile) {
        this.process = process;
        this.port = port;
        this.logFile = logFile;
        this.shutdownHook = ChildProcesses.reapOnExit(process, "prometheus-reaper");
    }

    /** A program of this name on the PATH, if there is one. */
    public static Optional<Path> onPath(String program) {
        String path = System.getenv().getOrDefault("PATH", "");
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir, program);
            if (!dir.isEmpty() && Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** Starts Prometheus on {@code config} (rule files resolve beside it) and waits until it is ready. */
    public static PrometheusServer start(Path config, Path workDir, Duration startTimeout) {
        Path binary = onPath("prometheus")
                .orElseThrow(() -> new IllegalStateException("no prometheus on the PATH (scripts/install-test-tools)"));
        int port = FreePorts.next();
        Path logFile = workDir.toAbsolutePath().resolve("prometheus.log");
        Process process;
        try {
            Files.createDirectories(workDir);
            process = new ProcessBuilder(List.of(
                            binary.toString(),
                            "--config.file=" + config.toAbsolutePath(),
                            "--storage.tsdb.path=" + workDir.toAbsolutePath().resolve("data"),
                            "--web.listen-address=127.0.0.1:" + port,
                            "--web.enable-lifecycle"))
                    .redirectErrorStream(true)
                    .redirectOutput(logFile.toFile())
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start " + binary, e);
        }
        PrometheusServer server = new PrometheusServer(process, port, logFile);
        long deadline = System.nanoTime() + startTimeout.toNanos();
        while (true) {
            try {
                if (server.http
                                .send(
                                        HttpRequest.newBuilder(URI.create(server.baseUrl() + "/-/ready"))
                                                .build(),
                                        HttpResponse.BodyHandlers.ofString())
                                .statusCode()
                        == 200) {
                    return server;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                server.close();
                throw new IllegalStateException(e);
            }
            if (!process.isAlive() || System.nanoTime() > deadline) {
                server.close();
                throw new IllegalStateException("Prometheus did not become ready; see " + logFile);
            }
            sleep(200);
        }
    }

    public String baseUrl() {
        return "http://127.0.0.1:" + port;
    }

    public Path logFile() {
        return logFile;
    }

    /** {@code GET /api/v1/<path>} with one query parameter; the answer's {@code data}. */
    public JsonNode api(String path, String parameter, String value) {
        String query = parameter == null
                ? ""
                : "?" + URLEncoder.encode(parameter, StandardCharsets.UTF_8) + "="
                        + URLEncoder.encode(value, StandardCharsets.UTF_8);
        try {
            HttpResponse<String> response = http.send(
                    HttpRequest.newBuilder(URI.create(baseUrl() + "/api/v1/" + path + query))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode body = JSON.readTree(response.body());
            if (response.statusCode() != 200
                    || !"success".equals(body.path("status").asText())) {
                throw new IllegalStateException(
                        "Prometheus answered " + response.statusCode() + ": " + response.body());
            }
            return body.path("data");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The result of an instant query. */
    public JsonNode query(String promql) {
        return api("query", "query", promql).path("result");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        ChildProcesses.stop(process, shutdownHook);
    }
}
