package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class NativePreloadTest {
    @Test
    void loadsLanceCoresAndRocksDbsLibrariesOnOneThreadOfItsOwn() throws Exception {
        // both unpack their library into the temp directory, which the build points into target/
        Files.createDirectories(Path.of(System.getProperty("java.io.tmpdir")));
        NativePreload.start();
        NativePreload.start(); // once per process
        assertThat(Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().equals("native-preload"))
                        .count())
                .isLessThanOrEqualTo(1);
        assertThat(NativePreload.loaded(Duration.ofSeconds(30))).isTrue();
    }
}
