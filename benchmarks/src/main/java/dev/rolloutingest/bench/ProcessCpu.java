package dev.rolloutingest.bench;

import java.time.Duration;

/** The CPU time a process has used so far, user and system (Linux: /proc/PID/stat utime + stime). */
final class ProcessCpu {
    private ProcessCpu() {}

    /** Seconds of CPU the process has used; 0 when it is gone or the system does not say. */
    static double seconds(long pid) {
        return ProcessHandle.of(pid)
                        .flatMap(p -> p.info().totalCpuDuration())
                        .map(Duration::toNanos)
                        .orElse(0L)
                / 1e9;
    }
}
