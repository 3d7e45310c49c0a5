package dev.rolloutingest.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Apicurio Registry (in-memory storage) as a child process, serving the Confluent-compatible API under
 * {@link #confluentUrl()}. It is a Quarkus application, so it runs in its own JVM, bound to loopback on
 * a free port, and is destroyed with this JVM.
 */
public final class ApicurioRegistry implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ApicurioRegistry.class);
    public static final String BUNDLE_PROPERTY = "rollout.apicurio.bundle";

    private final Process process;
    private final int port;
    private final Path logFile;
    private final Thread shutdownHook;

    private ApicurioRegistry(Process process, int port, Path logFile) {
        this.process = process;
        this.port = port;
        this.logFile = logFile;
        this.shutdownHook = ChildProcesses.reapOnExit(process, "apicurio-registry-reaper");
    }

    /**
     * Unpacks the bundle into {@code workDir} (once), starts the registry and waits until it answers.
     *
     * @param startTimeout how long to wait for the first successful HTTP answer
     */
    public static ApicurioRegistry start(Path workDir, Duration startTimeout) {
        Path runner = unpack(bundle(), workDir.toAbsolutePath());
        int port = FreePorts.next();
        Path logFile = workDir.toAbsolutePath().resolve("apicurio.log");
        Path tmp = workDir.toAbsolutePath().resolve("tmp");
        try {
            Files.createDirectories(tmp);
        } catch (IOException e) {
            throw new UncheckedIOException("Could not create " + tmp, e);
        }
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-Dquarkus.http.host=127.0.0.1",
                "-Dquarkus.http.port=" + port,
                "-Dquarkus.log.level=WARN",
                "-Dquarkus.banner.enabled=false",
                // Quarkus/Vert.x write caches to the temp dir: keep them inside workDir.
                "-Djava.io.tmpdir=" + tmp,
                "-Dvertx.cacheDirBase=" + tmp.resolve("vertx-cache"),
                "-jar",
                runner.getFileName().toString()));
        Process process;
        try {
            process = new ProcessBuilder(command)
                    .directory(runner.getParent().toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(logFile.toFile())
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("Could not start Apicurio Registry: " + command, e);
        }
        ApicurioRegistry registry = new ApicurioRegistry(process, port, logFile);
        try {
            registry.awaitReady(startTimeout);
        } catch (RuntimeException e) {
            registry.close();
            throw e;
        }
        return registry;
    }

    /** Base URL of the Confluent-compatible API: the value for {@code schema.registry.url}. */
    public String confluentUrl() {
        return "http://127.0.0.1:" + port + "/apis/ccompat/v7";
    }

    /**
     * Registers a schema under a subject through the Confluent-compatible API, as an independent client would
     * (plain REST); returns its id.
     *
     * @param schemaType AVRO, JSON or PROTOBUF; null for Avro (the API's default)
     */
    public int register(String subject, String schemaType, String schema) {
        String body = "{\"schema\":" + jsonString(schema)
                + (schemaType == null ? "" : ",\"schemaType\":" + jsonString(schemaType)) + "}";
        try {
            HttpResponse<String> response = HttpClient.newHttpClient()
                    .send(
                            HttpRequest.newBuilder(URI.create(confluentUrl() + "/subjects/" + subject + "/versions"))
                                    .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                                    .POST(HttpRequest.BodyPublishers.ofString(body))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            java.util.regex.Matcher id =
                    java.util.regex.Pattern.compile("\"id\"\\s*:\\s*(\\d+)").matcher(response.body());
            if (response.statusCode() != 200 || !id.find()) {
                throw new IllegalStateException(
                        "Registering " + subject + " answered HTTP " + response.statusCode() + ": " + response.body());
            }
            return Integer.parseInt(id.group(1));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static String jsonString(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
            }
        }
        return out.append('"').toString();
    }

    public int port() {
        return port;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    private void awaitReady(Duration timeout) {
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long started = System.nanoTime();
        long deadline = started + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException(
                        "Apicurio Registry exited with " + process.exitValue() + " during start; log: " + tail());
            }
            try {
                HttpResponse<Void> response = http.send(
                        HttpRequest.newBuilder(URI.create(confluentUrl() + "/subjects"))
                                .timeout(Duration.ofSeconds(2))
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.discarding());
                if (response.statusCode() == 200) {
                    log.info(
                            "Schema registry up at {} in {} ms",
                            confluentUrl(),
                            (System.nanoTime() - started) / 1_000_000);
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for Apicurio Registry", e);
            }
            sleep(250);
        }
        throw new IllegalStateException("Apicurio Registry not ready within " + timeout + "; log: " + tail());
    }

    private String tail() {
        try {
            List<String> lines = Files.readAllLines(logFile);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log at " + logFile + ")";
        }
    }

    static Path bundle() {
        String override = System.getProperty(BUNDLE_PROPERTY);
        if (override != null) {
            return Path.of(override);
        }
        Properties props = new Properties();
        try (InputStream in = ApicurioRegistry.class.getResourceAsStream("/apicurio-bundle.properties")) {
            props.load(in);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("apicurio-bundle.properties missing from the classpath", e);
        }
        Path bundle = Path.of(props.getProperty("bundle"));
        if (!Files.isRegularFile(bundle)) {
            throw new IllegalStateException("Apicurio Registry bundle not found at " + bundle
                    + "; the Maven build of embedded-services downloads it (mvn -pl embedded-services package),"
                    + " or point -D" + BUNDLE_PROPERTY + " at the tar.gz");
        }
        return bundle;
    }

    /** Unpacks with the system tar into workDir/apicurio-registry once; returns the runner jar. */
    private static Path unpack(Path bundle, Path workDir) {
        Path target = workDir.resolve("apicurio-registry");
        try {
            Path runner = findRunner(target);
            if (runner != null) {
                return runner;
            }
            Path staging = Files.createDirectories(workDir).resolve("apicurio-registry.unpacking");
            FileTrees.deleteRecursively(staging);
            Files.createDirectories(staging);
            Process tar = new ProcessBuilder("tar", "-xzf", bundle.toString(), "-C", staging.toString())
                    .redirectErrorStream(true)
                    .start();
            String output = new String(tar.getInputStream().readAllBytes());
            if (!tar.waitFor(5, TimeUnit.MINUTES) || tar.exitValue() != 0) {
                throw new IllegalStateException("Unpacking " + bundle + " failed: " + output);
            }
            // The rename makes a half-unpacked bundle impossible to mistake for a whole one.
            Files.move(staging, target);
            runner = findRunner(target);
            if (runner == null) {
                throw new IllegalStateException("No *-runner.jar inside " + bundle);
            }
            return runner;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not unpack " + bundle + " into " + target, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while unpacking " + bundle, e);
        }
    }

    private static Path findRunner(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return null;
        }
        try (var files = Files.walk(dir, 3)) {
            return files.filter(p -> p.getFileName().toString().endsWith("-runner.jar"))
                    .findFirst()
                    .orElse(null);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted", e);
        }
    }

    @Override
    public void close() {
        ChildProcesses.stop(process, shutdownHook);
    }
}
