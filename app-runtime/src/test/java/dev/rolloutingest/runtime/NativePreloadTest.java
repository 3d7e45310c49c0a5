package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class NativePreloadTest {
    @Test
    void loadsLanceCoresAndRocksDbsLibrariesOnOneThreadOfItsOwn() throws Exception {
        NativePreload.start();
        NativePreload.start(); // once per process
        assertThat(Thread.getAllStackTraces().keySet().stream()
                        .filter(t -> t.getName().equals("native-preload"))
                        .count())
                .isLessThanOrEqualTo(1);
        assertThat(NativePreload.loaded(Duration.ofSeconds(30))).isTrue();
    }
}
