package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestApp;
import dev.rolloutingest.merge.MergeApp;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** ingest and merge: run one app against a real cluster from a properties file plus env vars. */
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
}
