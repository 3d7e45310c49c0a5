package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;

/**
 * What the packaged command starts with, on the jar just packaged: lance-core's native library stored uncompressed in
 * a jar before lance-core's own (each start copies 173 MB instead of inflating them), and the class-data archive the
 * build made, which the rollout-ingest script and the apps' JVMs map instead of loading their classes one by one.
 */
class PackagedCommandIT {
    private static final Path JAR = Path.of("target", "rollout-ingest.jar").toAbsolutePath();
    private static final Path NATIVE_JAR = JAR.resolveSibling("native").resolve("lance-core-native.jar");

    @Test
    void thePackagedJarFindsLanceCoresLibraryStoredInAJarBesideIt() throws Exception {
        try (JarFile jar = new JarFile(JAR.toFile())) {
            assertThat(jar.getManifest().getMainAttributes().getValue("Class-Path"))
                    .startsWith("native/lance-core-native.jar ");
        }
        String platform =
                switch (System.getProperty("os.arch")) {
                    case "amd64", "x86_64" -> "linux-x86-64";
                    case "aarch64" -> System.getProperty("os.name").startsWith("Mac")
                            ? "darwin-aarch64"
                            : "linux-aarch64";
                    default -> throw new IllegalStateException(
                            "no lance-core library for " + System.getProperty("os.arch"));
                };
        String resource =
                "/nativelib/" + platform + "/liblance_jni." + (platform.startsWith("darwin") ? "dylib" : "so");
        try (JarFile natives = new JarFile(NATIVE_JAR.toFile())) {
            ZipEntry library = natives.getEntry(resource.substring(1));
            assertThat(library).as(resource + " in " + NATIVE_JAR).isNotNull();
            assertThat(library.getMethod()).as("stored, not deflated").isEqualTo(ZipEntry.STORED);
        }

        // a JVM on the packaged jar resolves lance-core's resource as lance-core's loader asks for it
        Path probe = Path.of("target", "it-native-probe", "Probe.java");
        Files.createDirectories(probe.getParent());
        Files.writeString(
                probe,
                "public class Probe { public static void main(String[] a) {"
                        + " System.out.println(org.lance.Dataset.class.getResource(a[0])); } }");
        String found = run(List.of(java(), "-cp", JAR.toString(), probe.toString(), resource), Map.of());
        assertThat(found.trim())
                .as("the stored copy, not lance-core's jar entry")
                .isEqualTo("jar:" + NATIVE_JAR.toFile().toURI() + "!" + resource);
    }

    @Test
    void theCommandAndTheAppsStartFromTheClassDataArchiveTheBuildMade() throws Exception {
        assumeFalse(Boolean.getBoolean("rollout.class.data.skip"), "the build made no archive");
        Path archive = JAR.resolveSibling("rollout-ingest.jsa");
        assertThat(archive).isRegularFile();
        // -Xshare:on: a JVM that cannot map the archive (another JDK, other jars) fails instead of going on without
        String share = "-Xshare:on -Xlog:class+load=info";

        Path script = JAR.getParent().getParent().getParent().resolve("rollout-ingest");
        String command = run(List.of(script.toString(), "--version"), Map.of("ROLLOUT_JAVA_OPTS", share));
        assertThat(command)
                .contains("dev.rolloutingest.launcher.Launcher source: shared objects file")
                .contains("rollout-ingest ");

        // as the ITs' ChildJvm starts an app: its main on the packaged jar's class path
        List<String> app = new ArrayList<>(List.of(java(), "-XX:SharedArchiveFile=" + archive));
        app.addAll(List.of(share.split(" ")));
        app.addAll(List.of("-cp", JAR.toString(), "dev.rolloutingest.ingest.IngestApp", "--no-such-config"));
        assertThat(run(app, Map.of())).contains("dev.rolloutingest.ingest.IngestApp source: shared objects file");
    }

    private static String java() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    private static String run(List<String> command, Map<String, String> env) throws Exception {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        Process process = builder.start();
        byte[] out = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
        return new String(out, StandardCharsets.UTF_8);
    }
}
