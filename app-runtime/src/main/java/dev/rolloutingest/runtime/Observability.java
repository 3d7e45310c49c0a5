package dev.rolloutingest.runtime;

import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The meter registry of a process: Prometheus, JVM metrics bound. Cardinality rule for every meter in
 * this project: never a tag per experiment, shard, partition or record; tags only from small fixed sets
 * (phase, result, trigger, reason).
 */
public final class Observability {
    private Observability() {}

    public static PrometheusMeterRegistry prometheus(String app) {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        registry.config().commonTags("app", app);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        return registry;
    }

    public static void mountMetrics(HttpEndpoint http, PrometheusMeterRegistry registry) {
        http.route(
                "/metrics",
                HttpAccess.Access.METRICS,
                exchange ->
                        HttpEndpoint.Response.text(200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape()));
    }
}
