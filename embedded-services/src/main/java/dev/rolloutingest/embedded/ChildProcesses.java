package dev.rolloutingest.embedded;

import java.util.concurrent.TimeUnit;

/** Child processes a test or the embedded default starts (the registry, Prometheus, app JVMs): killed with this JVM. */
final class ChildProcesses {
    private ChildProcesses() {}

    /** Registers a hook that kills the process when this JVM exits; returns it for {@link #stop}. */
    static Thread reapOnExit(Process process, String name) {
        Thread reaper = new Thread(process::destroyForcibly, name);
        Runtime.getRuntime().addShutdownHook(reaper);
        return reaper;
    }

    /** SIGTERM, up to 10 s for a clean exit, then SIGKILL; the exit hook is no longer needed. */
    static void stop(Process process, Thread reaper) {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        forget(reaper);
    }

    /** The process is gone: its exit hook (which holds it) is no longer needed. */
    static void forget(Thread reaper) {
        try {
            Runtime.getRuntime().removeShutdownHook(reaper);
        } catch (IllegalStateException alreadyShuttingDown) {
            // the hook is running or has run
        }
    }
}
