package dev.rolloutingest.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * Azurite, Microsoft's Azure Storage emulator, installed from the npm registry with the machine's npm, once per
 * version into a cache folder shared by every build on this machine ({@code ~/.cache/rollout-ingest/azurite-VERSION},
 * or {@code -Drollout.azurite.dir}). Where node or npm is missing or the registry cannot be reached it says so with
 * {@link Unavailable}, which tests turn into a skip; any other failure is an error.
 */
public final class AzuriteInstall {
    public static final String DIR_PROPERTY = "rollout.azurite.dir";

    /** node or npm is not on this machine, or the npm registry cannot be reached. */
    public static final class Unavailable extends RuntimeException {
        Unavailable(String message) {
            super(message);
        }
    }

    private AzuriteInstall() {}

    /** The Azurite version the build names (the parent pom's azurite.version). */
    public static String version() {
        Properties props = new Properties();
        try (InputStream in = AzuriteInstall.class.getResourceAsStream("/azurite.properties")) {
            props.load(in);
        } catch (IOException | NullPointerException e) {
            throw new IllegalStateException("azurite.properties missing from the classpath", e);
        }
        return props.getProperty("version");
    }

    /** The blob service's entry script, installing Azurite first when this machine does not have it yet. */
    public static Path blobMain() {
        String version = version();
        Path dir = Path.of(System.getProperty(
                DIR_PROPERTY,
                Path.of(System.getProperty("user.home"), ".cache", "rollout-ingest", "azurite-" + version)
                        .toString()));
        Path main = dir.resolve("node_modules/azurite/dist/src/blob/main.js");
        if (Files.isRegularFile(main)) {
            return main;
        }
        run(List.of("node", "--version"), null, "node");
        Path staging = dir.resolveSibling(
                dir.getFileName() + ".installing-" + ProcessHandle.current().pid());
        try {
            FileTrees.deleteRecursively(staging);
            Files.createDirectories(staging);
            run(
                    List.of(
                            "npm",
                            "install",
                            "--prefix",
                            staging.toString(),
                            "--no-audit",
                            "--no-fund",
                            "--no-save",
                            "azurite@" + version),
                    staging,
                    "npm install azurite@" + version);
            // The rename makes a half-installed copy impossible to mistake for a whole one.
            try {
                Files.move(staging, dir);
            } catch (IOException raced) {
                if (!Files.isRegularFile(main)) {
                    throw raced;
                }
                FileTrees.deleteRecursively(staging); // another build installed it meanwhile
            }
        } catch (IOException e) {
            throw new UncheckedIOException("Could not install Azurite into " + dir, e);
        }
        if (!Files.isRegularFile(main)) {
            throw new IllegalStateException("npm installed azurite@" + version + " without " + main);
        }
        return main;
    }

    private static void run(List<String> command, Path dir, String what) {
        Process process;
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            if (dir != null) {
                builder.directory(dir.toFile());
            }
            process = builder.start();
        } catch (IOException e) {
            throw new Unavailable(command.get(0) + " is not on this machine (" + e.getMessage() + "): Azurite, the"
                    + " Azure Storage emulator, cannot be installed from npm");
        }
        try {
            String output = new String(process.getInputStream().readAllBytes());
            if (!process.waitFor(10, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                throw new IllegalStateException(what + " took over 10 minutes");
            }
            if (process.exitValue() != 0) {
                String lower = output.toLowerCase(Locale.ROOT);
                if (lower.contains("enotfound")
                        || lower.contains("econnrefused")
                        || lower.contains("etimedout")
                        || lower.contains("eai_again")
                        || lower.contains("econnreset")
                        || lower.contains("network")) {
                    throw new Unavailable("the npm registry cannot be reached (" + what + "): " + tail(output));
                }
                throw new IllegalStateException(what + " failed with " + process.exitValue() + ": " + tail(output));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(what + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted during " + what, e);
        }
    }

    private static String tail(String output) {
        String trimmed = output.strip();
        return trimmed.length() <= 2000 ? trimmed : "..." + trimmed.substring(trimmed.length() - 2000);
    }
}
