package dev.rolloutingest.embedded;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;

/**
 * A main class of this project in a separate JVM on this JVM's classpath: how tests kill an app with
 * SIGKILL and restart it. Output goes to a log file; the process dies with this JVM.
 */
public final class ChildJvm implements AutoCloseable {
    private final Process process;
    private final Path log;
    private final Thread reaper;

    /**
     * Set (by a module's build) to a classpath entry that comes before this JVM's own: lance-core's native library
     * unpacked (a folder) or stored (a jar), found before the copy in its jar, as the packaged command finds it.
     */
    public static final String CLASSPATH_FIRST = "rollout.child.classpath.first";

    /**
     * Set (by the launcher module's build) to the packaged command's jar: children then run from it, its manifest's
     * class path and its class-data archive beside it ({@code rollout-ingest.jsa}, when the build made one), as the
     * rollout-ingest command runs them. A main that is not in the packaged command (a test's own) runs as without.
     */
    public static final String PACKAGED_JAR = "rollout.child.packaged.jar";

    private ChildJvm(Process process, Path log) {
        this.process = process;
        this.log = log;
        this.reaper = ChildProcesses.reapOnExit(process, "child-jvm-reaper-" + process.pid());
    }

    private static String classpath() {
        String own = System.getProperty("java.class.path");
        String first = System.getProperty(CLASSPATH_FIRST, "");
        return first.isEmpty() || !Files.exists(Path.of(first)) ? own : first + File.pathSeparator + own;
    }

    /**
     * The packaged command's jar if one is set and holds {@code main}, in itself or in a jar of its lib (by file name),
     * else null.
     */
    private static Path packagedCommand(Class<?> main) {
        String jar = System.getProperty(PACKAGED_JAR, "");
        if (jar.isEmpty() || !Files.isRegularFile(Path.of(jar))) {
            return null;
        }
        Path packaged = Path.of(jar).toAbsolutePath();
        try (JarFile own = new JarFile(packaged.toFile())) {
            if (own.getEntry(main.getName().replace('.', '/') + ".class") != null) {
                return packaged;
            }
            Path source = Path.of(
                    main.getProtectionDomain().getCodeSource().getLocation().toURI());
            Path inLib =
                    packaged.resolveSibling("lib").resolve(source.getFileName().toString());
            return Files.isRegularFile(inLib) ? packaged : null;
        } catch (IOException | URISyntaxException e) {
            return null;
        }
    }

    public static ChildJvm start(
            Class<?> main, List<String> args, Map<String, String> env, Path log, String... jvmArgs) {
        return start(List.of(), main, args, env, log, jvmArgs);
    }

    /** As {@link #start(Class, List, Map, Path, String...)}, the java command run through {@code launcher} (taskset). */
    public static ChildJvm start(
            List<String> launcher,
            Class<?> main,
            List<String> args,
            Map<String, String> env,
            Path log,
            String... jvmArgs) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(launcher);
        command.addAll(List.of(
                java,
                "-Xmx512m",
                "--add-opens=java.base/java.nio=ALL-UNNAMED",
                "--add-opens=jdk.httpserver/sun.net.httpserver=ALL-UNNAMED"));
        command.addAll(List.of(jvmArgs));
        Path packaged = packagedCommand(main);
        if (packaged != null) {
            Path archive =
                    packaged.resolveSibling(packaged.getFileName().toString().replaceFirst("\\.jar$", ".jsa"));
            if (Files.isRegularFile(archive)) {
                command.add("-XX:SharedArchiveFile=" + archive);
            }
            command.addAll(List.of("-cp", packaged.toString(), main.getName()));
        } else {
            command.addAll(List.of("-cp", classpath(), main.getName()));
        }
        command.addAll(args);
        try {
            Files.createDirectories(log.getParent());
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
            builder.environment().putAll(env);
            return new ChildJvm(builder.start(), log);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot start " + main.getName(), e);
        }
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    public Path log() {
        return log;
    }

    /** SIGKILL: no shutdown hook, no flush, no commit. */
    public void kill() {
        process.destroyForcibly();
        waitFor(30);
    }

    /** SIGTERM and wait for a clean exit. */
    public int stop() {
        process.destroy();
        return waitFor(60);
    }

    public int waitFor(long seconds) {
        try {
            if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            return -1;
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            kill();
        }
        if (!process.isAlive()) {
            ChildProcesses.forget(reaper); // tests start many: a hook each would stay for the JVM's life
        }
    }
}
