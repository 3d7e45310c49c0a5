package dev.rolloutingest.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.rolloutingest.embedded.FileTrees;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightDescriptor;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.ipc.ArrowStreamReader;

/**
 * The read server under concurrent training scans: 1, 8 and 32 clients each reading the whole table (the training
 * projection) over HTTP ({@code GET /rollouts:scan}) and over Arrow Flight, as aggregate rows/s against the same number
 * of plain lance-core scans of the base in this JVM, in the same run; then the same clients spread over two
 * {@code serve} replicas of the one table; each cell is rounds of that many reads at once, repeated for at least 5 s
 * after an uncounted warm-up. The servers run as {@code serve} processes of the launcher jar; a probe asks
 * {@code /health} every 100 ms throughout and the slowest answer is printed beside each row. Clients and servers share
 * the machine's cores, which the printed machine line states. Prints Markdown.
 */
final class ServeBench {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String COLUMNS = String.join(",", ScanBench.TRAINING_COLUMNS);

    private final Path dir;
    private final long baseRows;
    private final int pendingRows;
    private final int[] concurrencies;
    private final Path launcherJar;
    private final boolean serveDefaults;
    /** Reads the replicas turned away for now (429, 503, UNAVAILABLE), each retried after a second. */
    private final AtomicLong turnedAway = new AtomicLong();

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    ServeBench(Path dir, long baseRows, int pendingRows, int[] concurrencies, Path launcherJar, boolean serveDefaults) {
        this.serveDefaults = serveDefaults;
        this.dir = dir;
        this.baseRows = baseRows;
        this.pendingRows = pendingRows;
        this.concurrencies = concurrencies;
        this.launcherJar = launcherJar;
    }

    void run() throws Exception {
        if (!Files.isRegularFile(launcherJar)) {
            throw new IllegalArgumentException("--launcher-jar: no launcher jar at " + launcherJar.toAbsolutePath()
                    + " (build it with mvn -DskipTests install, or run from the repository root)");
        }
        Path path = dir.toAbsolutePath().resolve("serve-" + baseRows);
        FileTrees.deleteRecursively(path);
        long started = System.nanoTime();
        try (RolloutTable table = RolloutTable.createOrOpen(
                TableLocation.local(path), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            new ScanBench(dir, baseRows, pendingRows, 1, 0, 0).fill(table, new RolloutGenerator("bench", 0, 1));
        }
        System.err.printf("built the table in %.1f s%n", (System.nanoTime() - started) / 1e9);
        int most = 0;
        for (int c : concurrencies) {
            most = Math.max(most, c);
        }
        if (serveDefaults) {
            most = 0; // the replicas' own limits: clients past them are turned away and retry
        }
        try (Server one = Server.start(launcherJar, path, dir.resolve("serve-1.log"), most);
                Server two = Server.start(launcherJar, path, dir.resolve("serve-2.log"), most)) {
            one.awaitHealthy(http);
            two.awaitHealthy(http);
            System.out.printf(
                    "base %,d rows, %,d pending rows; each client reads every row once, projection %s; each serve"
                            + " replica a JVM of -Xmx1g with %s (reads turned away for now are retried after a"
                            + " second, counted below)%n%n",
                    baseRows,
                    pendingRows,
                    COLUMNS,
                    most == 0
                            ? "the default limits (rollout.scan.max.concurrent 2 per table, http.data.threads 8)"
                            : "--scan-max-concurrent " + most + " and HTTP_DATA_THREADS=" + most);
            for (int i = 0; i < 3; i++) { // JIT and caches of both replicas and of this JVM's clients, uncounted
                ScanBench.plainScan(path, ScanBench.TRAINING_COLUMNS);
                for (Server server : List.of(one, two)) {
                    httpScan(server);
                    flightScan(server);
                }
            }
            System.out.println("| concurrent scans | plain lance-core, rows/s | HTTP, rows/s | x plain | Flight, rows/s"
                    + " | x plain | /health slowest | HTTP, 2 replicas | x 1 replica | Flight, 2 replicas"
                    + " | x 1 replica | reads turned away and retried |");
            System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
            for (int clients : concurrencies) {
                long turnedAwayBefore = turnedAway.get();
                Rate plain = measure(clients, i -> ScanBench.plainScan(path, ScanBench.TRAINING_COLUMNS), null);
                Rate overHttp = measure(clients, i -> httpScan(one), one);
                Rate overFlight = measure(clients, i -> flightScan(one), one);
                Rate httpTwo = measure(clients, i -> httpScan(i % 2 == 0 ? one : two), one);
                Rate flightTwo = measure(clients, i -> flightScan(i % 2 == 0 ? one : two), one);
                System.out.printf(
                        "| %d | %,.0f | %,.0f | %.2f | %,.0f | %.2f | %d ms | %,.0f | %.2f | %,.0f | %.2f | %,d |%n",
                        clients,
                        plain.rowsPerSecond(),
                        overHttp.rowsPerSecond(),
                        overHttp.rowsPerSecond() / plain.rowsPerSecond(),
                        overFlight.rowsPerSecond(),
                        overFlight.rowsPerSecond() / plain.rowsPerSecond(),
                        Math.max(overHttp.slowestHealthMs(), overFlight.slowestHealthMs()),
                        httpTwo.rowsPerSecond(),
                        httpTwo.rowsPerSecond() / overHttp.rowsPerSecond(),
                        flightTwo.rowsPerSecond(),
                        flightTwo.rowsPerSecond() / overFlight.rowsPerSecond(),
                        turnedAway.get() - turnedAwayBefore);
                for (Rate r : List.of(plain, overHttp, overFlight, httpTwo, flightTwo)) {
                    if (r.rows() % baseRows != 0) { // every read of every round gets each key once
                        System.out.printf("(reads got %,d rows, not a multiple of %,d)%n", r.rows(), baseRows);
                    }
                }
            }
        }
    }

    /** A client's whole read: the rows it got. */
    @FunctionalInterface
    private interface Read {
        long rows(int client) throws Exception;
    }

    private record Rate(long rows, double seconds, long slowestHealthMs) {
        double rowsPerSecond() {
            return rows / seconds;
        }
    }

    /** Rounds of a cell are repeated until this much time was measured: one short round moves with the machine. */
    private static final double MIN_MEASURED_SECONDS = 5;

    /** Rounds of {@code clients} reads at once until {@link #MIN_MEASURED_SECONDS}: the rows and time of them all. */
    private Rate measure(int clients, Read read, Server probed) throws Exception {
        long rows = 0;
        double seconds = 0;
        long slowestHealthMs = 0;
        while (seconds < MIN_MEASURED_SECONDS) {
            Rate round = round(clients, read, probed);
            rows += round.rows();
            seconds += round.seconds();
            slowestHealthMs = Math.max(slowestHealthMs, round.slowestHealthMs());
        }
        return new Rate(rows, seconds, slowestHealthMs);
    }

    /** {@code clients} reads at once, timed from the first start to the last end; {@code probed}'s /health meanwhile. */
    private Rate round(int clients, Read read, Server probed) throws Exception {
        AtomicBoolean reading = new AtomicBoolean(true);
        AtomicLong slowest = new AtomicLong();
        Thread probe = null;
        if (probed != null) {
            probe = new Thread(() -> {
                while (reading.get()) {
                    long t = System.nanoTime();
                    try {
                        http.send(
                                HttpRequest.newBuilder(URI.create(probed.base() + "/health"))
                                        .timeout(Duration.ofSeconds(30))
                                        .build(),
                                HttpResponse.BodyHandlers.discarding());
                        slowest.accumulateAndGet((System.nanoTime() - t) / 1_000_000, Math::max);
                        Thread.sleep(100);
                    } catch (IOException e) {
                        slowest.set(Long.MAX_VALUE);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            probe.start();
        }
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        try {
            long started = System.nanoTime();
            List<Future<Long>> reads = new ArrayList<>();
            for (int i = 0; i < clients; i++) {
                int client = i;
                reads.add(pool.submit(() -> read.rows(client)));
            }
            long rows = 0;
            for (Future<Long> f : reads) {
                rows += f.get();
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            return new Rate(rows, seconds, slowest.get());
        } finally {
            reading.set(false);
            pool.shutdownNow();
            if (probe != null) {
                probe.join();
            }
        }
    }

    /** A scan over HTTP, counted batch by batch; a busy answer (429, 503) is retried after its Retry-After. */
    private long httpScan(Server server) throws Exception {
        URI uri = URI.create(server.base() + "/rollouts:scan?columns=" + COLUMNS);
        for (int attempt = 0; ; attempt++) {
            HttpResponse<InputStream> response =
                    http.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofInputStream());
            if ((response.statusCode() == 429 || response.statusCode() == 503) && attempt < 600) {
                turnedAway.incrementAndGet();
                response.body().close();
                Thread.sleep(1000L
                        * Long.parseLong(
                                response.headers().firstValue("Retry-After").orElse("1")));
                continue;
            }
            if (response.statusCode() != 200) {
                String body = new String(response.body().readAllBytes(), StandardCharsets.UTF_8);
                throw new IOException("scan answered " + response.statusCode() + ": " + body);
            }
            long rows = 0;
            try (BufferAllocator allocator = new RootAllocator();
                    ArrowStreamReader reader = new ArrowStreamReader(response.body(), allocator)) {
                while (reader.loadNextBatch()) {
                    rows += reader.getVectorSchemaRoot().getRowCount();
                }
            }
            return rows;
        }
    }

    /** A scan over Flight: one endpoint (one share), whose one answer holds the scan whole (its next ticket tails). */
    private long flightScan(Server server) throws Exception {
        ObjectNode command = JSON.createObjectNode().put("read", "scan").put("shares", 1);
        command.putObject("params").put("columns", COLUMNS);
        try (BufferAllocator allocator = new RootAllocator();
                FlightClient client = FlightClient.builder(
                                allocator, Location.forGrpcInsecure("127.0.0.1", server.flightPort))
                        .build()) {
            FlightInfo info = retried(() -> client.getInfo(FlightDescriptor.command(JSON.writeValueAsBytes(command))));
            Ticket ticket = info.getEndpoints().get(0).getTicket();
            return retried(() -> {
                long rows = 0;
                try (FlightStream stream = client.getStream(ticket)) {
                    while (stream.next()) {
                        rows += stream.getRoot().getRowCount();
                    }
                }
                return rows;
            });
        }
    }

    private interface Call<T> {
        T call() throws Exception;
    }

    /** Flight's busy answer is UNAVAILABLE: wait a second and ask again, as the Python client does. */
    private <T> T retried(Call<T> call) throws Exception {
        for (int attempt = 0; ; attempt++) {
            try {
                return call.call();
            } catch (org.apache.arrow.flight.FlightRuntimeException e) {
                if (e.status().code() != org.apache.arrow.flight.FlightStatusCode.UNAVAILABLE || attempt >= 600) {
                    throw e;
                }
                turnedAway.incrementAndGet();
                Thread.sleep(1000);
            }
        }
    }

    /** A {@code serve} process of the launcher jar on free ports. */
    private static final class Server implements AutoCloseable {
        private final Process process;
        private final int port;
        private final int flightPort;

        private Server(Process process, int port, int flightPort) {
            this.process = process;
            this.port = port;
            this.flightPort = flightPort;
        }

        /** @param concurrency scans and data threads the replica allows; 0: its defaults */
        static Server start(Path launcherJar, Path table, Path log, int concurrency) throws IOException {
            int port = FreePorts.next();
            int flightPort = FreePorts.next();
            String java = ProcessHandle.current().info().command().orElse("java");
            ProcessBuilder builder = new ProcessBuilder(
                            java,
                            "-Xmx1g",
                            "--add-opens=java.base/java.nio=ALL-UNNAMED",
                            "--add-opens=jdk.httpserver/sun.net.httpserver=ALL-UNNAMED",
                            "-jar",
                            launcherJar.toString(),
                            "serve",
                            "--table",
                            table.toString(),
                            "--topic",
                            ScanBench.TOPIC,
                            "--port",
                            Integer.toString(port),
                            "--flight-port",
                            Integer.toString(flightPort))
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile());
            if (concurrency > 0) {
                builder.command().addAll(List.of("--scan-max-concurrent", Integer.toString(concurrency)));
                builder.environment().put("HTTP_DATA_THREADS", Integer.toString(concurrency));
            }
            builder.environment().putIfAbsent("LANCE_LOG", "warn,lance::index=off");
            return new Server(builder.start(), port, flightPort);
        }

        String base() {
            return "http://127.0.0.1:" + port;
        }

        void awaitHealthy(HttpClient http) throws Exception {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (System.nanoTime() < deadline && process.isAlive()) {
                try {
                    if (http.send(
                                            HttpRequest.newBuilder(URI.create(base() + "/health"))
                                                    .build(),
                                            HttpResponse.BodyHandlers.discarding())
                                    .statusCode()
                            == 200) {
                        return;
                    }
                } catch (IOException e) {
                    // not listening yet
                }
                Thread.sleep(200);
            }
            throw new IllegalStateException("serve on port " + port + " did not answer /health within 60 s");
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }
}
