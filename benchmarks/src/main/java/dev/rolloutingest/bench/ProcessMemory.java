package dev.rolloutingest.bench;

import java.nio.file.Files;
import java.nio.file.Path;

/** A process's resident memory from /proc (Linux): now, and its peak. 0 when the process is gone. */
final class ProcessMemory {
    private ProcessMemory() {}

    static long rssMiB(long pid) {
        return statusField(pid, "VmRSS:");
    }

    static long hwmMiB(long pid) {
        return statusField(pid, "VmHWM:");
    }

    private static long statusField(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024;
                }
            }
        } catch (Exception e) {
            // gone
        }
        return 0;
    }
}
