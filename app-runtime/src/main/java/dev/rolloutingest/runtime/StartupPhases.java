package dev.rolloutingest.runtime;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How long an app's start took and where the time went, from the JVM's own start to Kafka Streams' first RUNNING,
 * logged once: what a restart costs is read from it (docs/reliability.md).
 */
final class StartupPhases {
    private static final Logger log = LoggerFactory.getLogger(StartupPhases.class);

    private final String app;
    private final List<String> phases = new ArrayList<>();
    private final long jvmStarted = ManagementFactory.getRuntimeMXBean().getStartTime();
    private long last = jvmStarted;
    private boolean running;

    StartupPhases(String app) {
        this.app = app;
        mark("JVM and classes until the app began");
    }

    /** Ends the phase now running, named by what it did. */
    synchronized void mark(String phase) {
        long now = System.currentTimeMillis();
        phases.add(phase + " " + (now - last) + " ms");
        last = now;
    }

    /** Kafka Streams is RUNNING: the first time, logs the phases and returns the line; later, null. */
    synchronized String running() {
        if (running) {
            return null;
        }
        running = true;
        mark("Streams joining the group and restoring its stores until RUNNING");
        String line =
                app + ": RUNNING " + (last - jvmStarted) + " ms after the JVM started: " + String.join(", ", phases);
        log.info(line);
        return line;
    }
}
