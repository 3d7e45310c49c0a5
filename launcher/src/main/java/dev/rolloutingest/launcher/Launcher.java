package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.DirectBuffers;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The rollout-ingest command line. */
@Command(
        name = "rollout-ingest",
        mixinStandardHelpOptions = true,
        version = "rollout-ingest 0.1.0",
        description = {
            "Lands RL rollouts from Kafka in a Lance table.",
            "Benchmarks: rollout-ingest bench --help (the benchmarks module's jar)."
        },
        subcommands = {
            DemoCommand.class,
            AppCommands.Ingest.class,
            AppCommands.Merge.class,
            AppCommands.Pipeline.class,
            ProduceCommand.class,
            ServeCommand.class,
            ReadCommands.Get.class,
            ReadCommands.List.class,
            TrainingReadCommands.Scan.class,
            TrainingReadCommands.Tail.class,
            StatusCommand.class,
            TablesCommand.class,
            ReplayCommand.class,
            SnapshotCommand.class,
            DeleteCommand.class,
            RepairCommand.class,
            ConfigDocsCommand.class
        })
public final class Launcher implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static int run(String... args) {
        return commandLine(System.getenv())
                .setExecutionExceptionHandler((e, cmd, parsed) -> {
                    cmd.getErr().println("error: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
                    return 1;
                })
                .execute(args);
    }

    /** The command line, options that stand for settings defaulting from {@code env} and the settings' declarations. */
    static CommandLine commandLine(java.util.Map<String, String> env) {
        return new CommandLine(new Launcher())
                .setDefaultValueProvider(new SettingDefaults(env))
                .setCaseInsensitiveEnumValuesAllowed(true);
    }

    public static void main(String[] args) {
        DirectBuffers.allocateUnzeroed(); // before any Netty class loads
        int code = run(args);
        if (code != 0 || !KeepRunning.requested()) {
            System.exit(code);
        }
    }

    /** Subcommands that leave services up (demo --keep-running, serve, ingest, merge) block in their own call. */
    static final class KeepRunning {
        private static volatile boolean requested;

        static boolean requested() {
            return requested;
        }

        static void request() {
            requested = true;
        }
    }
}
