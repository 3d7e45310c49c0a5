package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.merge.MergeApp;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** ingest, merge and pipeline: run one app, or both in one process, against a real cluster from properties files plus env vars. */
final class AppCommands {
    private AppCommands() {}

    @Command(
            name = "ingest",
            mixinStandardHelpOptions = true,
            description = "Run ingest-topology (config file + env vars; see config-docs).")
    static final class Ingest implements Callable<Integer> {
        @Parameters(index = "0", arity = "0..1", description = "Properties file")
        Path config;

        @Override
        public Integer call() throws Exception {
            Launcher.KeepRunning.request();
            IngestApp.main(config == null ? new String[0] : new String[] {config.toString()});
            return 0;
        }
    }

    @Command(
            name = "merge",
            mixinStandardHelpOptions = true,
            description = "Run merge-worker (config file + env vars; see config-docs).")
    static final class Merge implements Callable<Integer> {
        @Parameters(index = "0", arity = "0..1", description = "Properties file")
        Path config;

        @Override
        public Integer call() throws Exception {
            Launcher.KeepRunning.request();
            MergeApp.main(config == null ? new String[0] : new String[] {config.toString()});
            return 0;
        }
    }

    @Command(
            name = "pipeline",
            mixinStandardHelpOptions = true,
            description = "Run ingest-topology and merge-worker in one process (one machine: one JVM start and one heap"
                    + " instead of two; each keeps its own config and HTTP port; env vars apply to both).")
    static final class Pipeline implements Callable<Integer> {
        @Parameters(index = "0", description = "The ingest app's properties file")
        Path ingestConfig;

        @Parameters(index = "1", description = "The merge-worker's properties file")
        Path mergeConfig;

        @Override
        public Integer call() throws Exception {
            Launcher.KeepRunning.request();
            PipelineApp.main(new String[] {ingestConfig.toString(), mergeConfig.toString()});
            return 0;
        }
    }
}
