package dev.rolloutingest.runtime;

import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.Topology;

/**
 * What both apps are made of, opened and closed in one order: the schema registry checked (a wrong URL fails
 * the start, not the first record), a Prometheus registry, the tables, the optional shadow consumer group that
 * shows a position to standard lag tools, then Kafka Streams and the HTTP endpoint with /metrics. Each app adds
 * its topology, its /health details, its routes and its own parts.
 */
public abstract class RolloutApp implements AutoCloseable {
    protected final PrometheusMeterRegistry registry;
    /** The tables the app serves: one, or a catalog under a root. */
    protected final TableCatalog tables;
    /** Null when no shadow group is configured. */
    private final ShadowGroupOffsets shadowGroup;

    private StreamsRuntime runtime;
    private HttpEndpoint http;
    private final StartupPhases startup;

    /**
     * @param shadowGroup the shadow group's name, empty for none
     * @param shadowGroupKey the setting that names it, for its errors
     */
    protected RolloutApp(String name, AppConfig config, String shadowGroup, String shadowGroupKey) {
        this.startup = new StartupPhases(name);
        NativePreload.start();
        // the shadow group's offsets are a round trip to the cluster: read beside the registry's check and the
        // tables' open, its error raised after theirs; the registry is checked first, before any table is touched
        CompletableFuture<ShadowGroupOffsets> shadow = shadowGroup.isEmpty()
                ? CompletableFuture.completedFuture(null)
                : CompletableFuture.supplyAsync(
                        () -> new ShadowGroupOffsets(
                                shadowGroup,
                                shadowGroupKey,
                                config.clientConfig(),
                                Duration.ofMillis(config.lagPublishIntervalMs())),
                        RolloutApp::startupThread);
        TableCatalog opened = null;
        PrometheusMeterRegistry prometheus = null;
        try {
            new SchemaRegistryClient(SerdeConfig.from(config.serdeConfig())).checkReachable();
            startup.mark("schema registry reached");
            prometheus = Observability.prometheus(name);
            opened = config.openTables(prometheus);
            startup.mark("tables opened");
            this.shadowGroup = joinStartup(shadow);
            startup.mark("shadow group set up (beside the two before)");
        } catch (RuntimeException | Error e) {
            shadow.thenAccept(group -> {
                if (group != null) {
                    group.close();
                }
            });
            if (opened != null) {
                opened.close();
            }
            if (prometheus != null) {
                prometheus.close();
            }
            throw e;
        }
        this.registry = prometheus;
        this.tables = opened;
    }

    private static void startupThread(Runnable task) {
        Thread thread = new Thread(task, "app-startup");
        thread.setDaemon(true);
        thread.start();
    }

    /** A start step's result, its own exception raised as it was thrown. */
    private static <T> T joinStartup(CompletableFuture<T> step) {
        try {
            return step.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }

    /** Where a processor reports the position the shadow group shows; does nothing without one. */
    protected final ObjLongConsumer<TopicPartition> shadowPositions() {
        return shadowGroup == null ? (tp, offset) -> {} : shadowGroup::advance;
    }

    /** Kafka Streams around the topology, and the HTTP endpoint with /metrics (not yet started). */
    protected final void serve(String name, Topology topology, AppConfig config) {
        startup.mark("the app's parts and topology built");
        this.runtime = new StreamsRuntime(
                name,
                topology,
                config.streamsProperties(),
                registry,
                config.healthMaxThreadReplacements(),
                config.healthThreadReplacementWindowMs());
        this.http = new HttpEndpoint(config.httpHost(), config.httpPort(), config.httpAccess(), config.httpLimits());
        Observability.mountMetrics(http, registry);
        runtime.onRunning(() -> startup.running());
        startup.mark("Kafka Streams and HTTP built");
    }

    /** Starts serving HTTP, then Streams. */
    protected final void startServing() {
        startup.mark("health and routes mounted");
        http.start();
        runtime.start();
        startup.mark("HTTP and Streams started");
    }

    public StreamsRuntime runtime() {
        return runtime;
    }

    public HttpEndpoint http() {
        return http;
    }

    public TableCatalog tables() {
        return tables;
    }

    /** The table of a one-table deployment (fails for many tables: see {@link #tables}). */
    public RolloutTable table() {
        return tables.only();
    }

    public PrometheusMeterRegistry registry() {
        return registry;
    }

    /** What must stop while Streams still owns the app's partitions (work that a new owner would redo beside). */
    protected void beforeStreamsClose() {}

    /** The app's own parts, closed after Streams and before the shadow group, HTTP, the table and the registry. */
    protected abstract void closeOwnParts();

    @Override
    public final void close() {
        beforeStreamsClose();
        runtime.close();
        closeOwnParts();
        if (shadowGroup != null) {
            shadowGroup.close();
        }
        http.close();
        tables.close();
        registry.close();
    }
}
