package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.merge.MergeApp;
import dev.rolloutingest.merge.MergeConfig;
import dev.rolloutingest.runtime.CommonKeys;
import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.DirectBuffers;
import dev.rolloutingest.runtime.NativePreload;
import dev.rolloutingest.runtime.StreamsRuntime;
import java.nio.file.Path;
import org.apache.kafka.common.config.ConfigException;

/**
 * The ingest app and the merge-worker in one JVM, each with its own config, Kafka Streams instance and HTTP port:
 * the deployment of one machine. Two processes there pay two JVM starts (class loading and the JIT compiling the same
 * Kafka, Arrow and Lance code twice: ~7 s of CPU each) and two heaps; this pays one. They scale apart only as two.
 */
public final class PipelineApp implements AutoCloseable {
    private final IngestApp ingest;
    private final MergeApp merge;

    private PipelineApp(IngestApp ingest, MergeApp merge) {
        this.ingest = ingest;
        this.merge = merge;
    }

    /** Starts the merge-worker, then the ingest app; fails at start when their configs would collide. */
    public static PipelineApp start(IngestConfig ingestConfig, MergeConfig mergeConfig) {
        if (ingestConfig.applicationId().equals(mergeConfig.applicationId())) {
            throw new ConfigException(
                    CommonKeys.APPLICATION_ID,
                    ingestConfig.applicationId(),
                    "the ingest app and the merge-worker of one process need application ids of their own");
        }
        if (ingestConfig.httpPort() != 0 && ingestConfig.httpPort() == mergeConfig.httpPort()) {
            throw new ConfigException(
                    CommonKeys.HTTP_PORT,
                    ingestConfig.httpPort(),
                    "the ingest app and the merge-worker of one process need HTTP ports of their own");
        }
        MergeApp merge = new MergeApp(mergeConfig).start();
        IngestApp ingest = null;
        try {
            ingest = new IngestApp(ingestConfig);
            return new PipelineApp(ingest.start(), merge);
        } catch (RuntimeException | Error e) {
            // a process that cannot ingest stops whole: a merge-worker alone would keep it up, looking healthy
            closeQuietly(ingest, e);
            closeQuietly(merge, e);
            throw e;
        }
    }

    private static void closeQuietly(AutoCloseable app, Throwable cause) {
        if (app == null) {
            return;
        }
        try {
            app.close();
        } catch (Exception | Error e) {
            cause.addSuppressed(e);
        }
    }

    /**
     * Both at once, as two processes stop under one SIGTERM: each close may wait up to Kafka Streams' 30 s, and one
     * after the other they would outlast an orchestrator's grace period.
     */
    @Override
    public void close() {
        Thread ingestClose = new Thread(ingest::close, "rollout-pipeline-ingest-close");
        ingestClose.start();
        try {
            merge.close();
        } finally {
            try {
                ingestClose.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Runs until SIGTERM: {@code PipelineApp ingest.properties merge.properties}, env vars override both files. */
    public static void main(String[] args) throws InterruptedException {
        DirectBuffers.allocateUnzeroed(); // before any Netty class loads
        NativePreload.start(); // first: it overlaps the rest of the start
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: PipelineApp <ingest.properties> <merge.properties>");
        }
        IngestConfig ingestConfig = IngestConfig.load(ConfigSources.file(Path.of(args[0])), System.getenv());
        MergeConfig mergeConfig = MergeConfig.load(ConfigSources.file(Path.of(args[1])), System.getenv());
        StreamsRuntime.runUntilTerminated(start(ingestConfig, mergeConfig), "rollout-pipeline");
    }
}
