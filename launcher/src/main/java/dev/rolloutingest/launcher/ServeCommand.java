package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.HttpLimits;
import dev.rolloutingest.runtime.Observability;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = "Serve the read API (GET /rollouts/{id}, /rollouts/{id}/payload, /rollouts?experiment=, Arrow"
                + " streams for training: /rollouts:scan, /rollouts:tail) with"
                + " /metrics and /health. Tokens and TLS come from the apps' HTTP_AUTH_* and HTTP_TLS_* env vars, the"
                + " data threads and the stall limit from HTTP_DATA_THREADS and HTTP_STALL_TIMEOUT_MS;"
                + " beyond loopback tokens are required (or HTTP_ALLOW_UNAUTHENTICATED=true).")
final class ServeCommand implements Callable<Integer> {
    @Mixin
    TableOptions table;

    @Option(
            names = "--all-tables",
            description = "With --root: serve every table under it at /tables/{table}/... (--table is then ignored)")
    boolean allTables;

    @Option(names = "--host", defaultValue = "127.0.0.1")
    String host;

    @Option(names = "--port", defaultValue = "8092")
    int port;

    @Option(
            names = "--flight-port",
            defaultValue = "8093",
            description = "Port of the Arrow Flight reads for data-parallel trainers, on --host (0 = any free port,"
                    + " -1 = none; default ${DEFAULT-VALUE})")
    int flightPort;

    @Option(
            names = "--bootstrap-servers",
            description = "Kafka, for DELETE /rollouts/{id} (tombstones to --topic); without it deletes are refused")
    String bootstrapServers;

    @Option(
            names = "--topic",
            descriptionKey = IngestConfig.INPUT_TOPIC,
            description = "The input topic deletes are published to, and whose partitions the cursors of scans and"
                    + " tails count offsets of (default ${DEFAULT-VALUE}; setting "
                    + IngestConfig.INPUT_TOPIC + ")")
    String topic;

    @Mixin
    KafkaClientOptions kafka;

    @Option(
            names = "--delete-wait-ms",
            defaultValue = "30000",
            description = "How long DELETE waits for reads to stop returning the record (default ${DEFAULT-VALUE})")
    long deleteWaitMs;

    @Override
    public Integer call() throws Exception {
        Launcher.KeepRunning.request();
        PrometheusMeterRegistry registry = Observability.prometheus("rollout-read");
        if (allTables && table.root == null) {
            System.err.println("serve: --all-tables needs --root");
            return 2;
        }
        TableCatalog t = allTables
                ? TableCatalog.under(
                        TableOptions.location(table.root, table.storage), table.settings(), registry, 100_000)
                : TableCatalog.single(RolloutTable.open(table.location(), table.settings(), registry));
        HttpEndpoint http =
                new HttpEndpoint(host, port, HttpAccess.fromEnv(System.getenv()), HttpLimits.fromEnv(System.getenv()));
        Observability.mountMetrics(http, registry);
        http.route(
                "/health",
                HttpAccess.Access.PUBLIC,
                exchange -> HttpEndpoint.Response.json(200, Map.of("app", "rollout-read")));
        Deletes deletes = bootstrapServers == null ? null : new Deletes(kafka.clientConfig(bootstrapServers), topic);
        new ReadApi(t, deletes, java.time.Duration.ofMillis(deleteWaitMs), topic).mount(http);
        FlightReads flight = flightPort < 0
                ? null
                : FlightReads.start(
                        t,
                        topic,
                        host,
                        flightPort,
                        HttpAccess.fromEnv(System.getenv()),
                        HttpLimits.fromEnv(System.getenv()));
        http.start();
        System.out.println("read API on " + http.baseUrl() + (allTables ? "/tables" : "/rollouts"));
        if (flight != null) {
            System.out.println("Arrow Flight reads on " + flight.location());
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            http.close();
            if (flight != null) {
                try {
                    flight.close();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (deletes != null) {
                deletes.close();
            }
            t.close();
            stopped.countDown();
        }));
        stopped.await();
        return 0;
    }
}
