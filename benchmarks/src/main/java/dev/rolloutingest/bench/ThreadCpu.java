package dev.rolloutingest.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The CPU seconds a process's threads have used, summed by what they do (Linux: utime + stime of
 * /proc/PID/task/TID/stat): a JVM that lands rows for seconds after its start spends a share of them compiling, which
 * its total alone does not tell apart from the work.
 */
final class ThreadCpu {
    static final String JIT_COMPILERS = "JIT compilers";

    /** Clock ticks per second of /proc's times: USER_HZ, 100 on every Linux this runs on. */
    private static final double TICKS_PER_SECOND = 100;

    private ThreadCpu() {}

    /** Seconds by role over the threads alive now of these processes; empty where /proc does not say. */
    static Map<String, Double> byRole(long... pids) {
        Map<String, Double> seconds = new TreeMap<>();
        for (long pid : pids) {
            try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
                for (Path task : tasks.toList()) {
                    try {
                        String stat = Files.readString(task.resolve("stat"));
                        String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
                        String[] fields =
                                stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                        double used = (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / TICKS_PER_SECOND;
                        seconds.merge(role(name), used, Double::sum);
                    } catch (IOException | RuntimeException e) {
                        // the thread ended between the listing and the read
                    }
                }
            } catch (IOException e) {
                // the process ended, or no /proc
            }
        }
        return seconds;
    }

    /** A thread's role from its name as the kernel keeps it (the first 15 characters). */
    static String role(String name) {
        if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
            return JIT_COMPILERS;
        }
        if (name.startsWith("GC Thread") || name.startsWith("G1 ")) {
            return "GC";
        }
        if (name.startsWith("tokio-rt-worker") || name.startsWith("lance-cpu")) {
            return "lance-core native";
        }
        if (name.startsWith("peer-ingest-")) {
            return "ingest stream threads";
        }
        if (name.startsWith("peer-merge-")) {
            return "merge-worker stream threads";
        }
        if (name.startsWith("task-thread-")) {
            return "Connect task threads";
        }
        return name.replaceAll("[0-9]+", "#");
    }

    /**
     * What each role used from {@code from} to {@code to}, the largest first, as "role s (share)", at most {@code top}
     * roles and the rest together.
     */
    static String between(Map<String, Double> from, Map<String, Double> to, int top) {
        List<Map.Entry<String, Double>> used = new ArrayList<>();
        double total = 0;
        for (Map.Entry<String, Double> role : to.entrySet()) {
            // a role's threads that ended in between take their seconds with them: never below 0
            double seconds = Math.max(0, role.getValue() - from.getOrDefault(role.getKey(), 0.0));
            used.add(Map.entry(role.getKey(), seconds));
            total += seconds;
        }
        used.sort(Map.Entry.<String, Double>comparingByValue().reversed());
        StringBuilder text = new StringBuilder(String.format("%.1f s", total));
        double rest = total;
        for (int i = 0; i < Math.min(top, used.size()); i++) {
            Map.Entry<String, Double> role = used.get(i);
            text.append(String.format(
                    "; %s %.1f s (%.0f %%)", role.getKey(), role.getValue(), 100 * role.getValue() / total));
            rest -= role.getValue();
        }
        if (used.size() > top) {
            text.append(String.format("; the rest %.1f s", rest));
        }
        return text.toString();
    }
}
