package dev.rolloutingest.table.storage;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLibraryCopiesTest {
    @TempDir
    Path tmp;

    @Test
    void copiesLeftByKilledProcessesAreDeletedAndFreshOnesAndOtherFilesAreKept() throws Exception {
        Path old = Files.write(tmp.resolve("liblance_jni123.so"), new byte[1024]);
        Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofHours(2))));
        Path fresh = Files.write(tmp.resolve("liblance_jni456.so"), new byte[1024]);
        Path oldRocksDb = Files.write(tmp.resolve("librocksdbjni8734.so"), new byte[1024]);
        Files.setLastModifiedTime(oldRocksDb, FileTime.from(Instant.now().minus(Duration.ofHours(2))));
        Path freshRocksDb = Files.write(tmp.resolve("librocksdbjni9911.so"), new byte[1024]);
        Path other = Files.write(tmp.resolve("libother123.so"), new byte[1024]);
        Files.setLastModifiedTime(other, FileTime.from(Instant.now().minus(Duration.ofHours(2))));

        assertThat(NativeLibraryCopies.sweep(tmp, NativeLibraryCopies.MIN_AGE)).isEqualTo(2);

        assertThat(old).doesNotExist();
        assertThat(oldRocksDb).doesNotExist();
        assertThat(freshRocksDb).exists();
        assertThat(fresh).exists(); // may be another process's, between writing and loading it
        assertThat(other).exists();
    }

    @Test
    void everyTableOpenSweepsTheTempDirectoryBeforeLanceLoads() throws Exception {
        // The sweep is wired where the table module first touches lance-core.
        assertThat(Files.readString(Path.of("src/main/java/dev/rolloutingest/table/storage/LanceIo.java")))
                .containsSubsequence("NativeLibraryCopies.sweepOnce();", "Session.builder()");
    }
}
