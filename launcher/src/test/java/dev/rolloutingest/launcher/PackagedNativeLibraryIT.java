package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The packaged command finds lance-core's native library as a plain file beside its jar, before the copy inside
 * lance-core's jar, so each start copies it instead of inflating 173 MB. Runs after packaging, on the packaged jar.
 */
class PackagedNativeLibraryIT {
    private static final Path JAR = Path.of("target", "rollout-ingest.jar");

    @Test
    void thePackagedJarFindsLanceCoresLibraryUnpackedBesideIt() throws Exception {
        try (JarFile jar = new JarFile(JAR.toFile())) {
            assertThat(jar.getManifest().getMainAttributes().getValue("Class-Path"))
                    .startsWith("native/ ");
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
        assertThat(JAR.resolveSibling("native" + resource)).isRegularFile();

        // a JVM on the packaged jar resolves lance-core's resource as lance-core's loader asks for it
        Path probe = Path.of("target", "it-native-probe", "Probe.java");
        Files.createDirectories(probe.getParent());
        Files.writeString(
                probe,
                "public class Probe { public static void main(String[] a) {"
                        + " System.out.println(org.lance.Dataset.class.getResource(a[0])); } }");
        String java = ProcessHandle.current().info().command().orElse("java");
        Process process = new ProcessBuilder(
                        List.of(java, "-cp", JAR.toAbsolutePath().toString(), probe.toString(), resource))
                .redirectErrorStream(true)
                .start();
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
        String found = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(found)
                .as("the unpacked file, not lance-core's jar entry")
                .startsWith("file:")
                .endsWith("native" + resource.replace('/', File.separatorChar).replace(File.separatorChar, '/'));
    }
}
