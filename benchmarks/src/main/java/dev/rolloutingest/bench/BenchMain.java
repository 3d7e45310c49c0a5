package dev.rolloutingest.bench;

import dev.rolloutingest.runtime.DirectBuffers;
import picocli.CommandLine;

/** {@code rollout-ingest bench ...}: the launcher script hands this subcommand to the benchmarks jar. */
public final class BenchMain {
    private BenchMain() {}

    public static void main(String[] args) {
        DirectBuffers.allocateUnzeroed(); // the limits' JVM allocates as the apps do
        int code = new CommandLine(new BenchCommand())
                .setCommandName("rollout-ingest bench")
                .setExecutionExceptionHandler((e, cmd, parsed) -> {
                    cmd.getErr().println("error: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
                    return 1;
                })
                .execute(args);
        System.exit(code);
    }
}
