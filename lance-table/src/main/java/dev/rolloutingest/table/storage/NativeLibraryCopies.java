package dev.rolloutingest.table.storage;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * lance-core 7.0.0 copies its 173 MB native library to a new {@code liblance_jni*.so} in {@code java.io.tmpdir}
 * every time a JVM loads it, and deletes the copy only on a clean exit; RocksDB, which Kafka Streams' state stores load,
 * does the same with its 15 MB {@code librocksdbjni*.so}. A process that is killed (OOM killer, SIGKILL, a halt) leaves
 * its copies behind, so an app that crash-loops fills its temp directory: 178 lance-core copies took 30 GB here and
 * filled the disk, and 713 RocksDB copies another 11 GB. Each process that opens a table removes the copies of either
 * older than a minute before it loads lance-core (and before its Streams app opens a store). A copy another live
 * process has loaded is safe to unlink: its mapping stays valid until it exits.
 */
final class NativeLibraryCopies {
    private static final Logger log = LoggerFactory.getLogger(NativeLibraryCopies.class);

    /** The copies' names, and whose they are. */
    static final Map<String, String> COPIES =
            Map.of("liblance_jni*.so", "lance-core", "librocksdbjni*.so", "RocksDB (Kafka Streams' state stores)");
    /** Younger copies may be another process's, between writing and loading it. */
    static final Duration MIN_AGE = Duration.ofMinutes(1);

    private static final AtomicBoolean SWEPT = new AtomicBoolean();

    private NativeLibraryCopies() {}

    /** Once per process, before lance-core is first used. */
    static void sweepOnce() {
        if (SWEPT.compareAndSet(false, true)) {
            sweep(Path.of(System.getProperty("java.io.tmpdir")), MIN_AGE);
        }
    }

    /** Deletes the leftover copies of every library older than {@code minAge} in {@code dir}; returns how many. */
    static int sweep(Path dir, Duration minAge) {
        int deleted = 0;
        for (Map.Entry<String, String> library : COPIES.entrySet()) {
            deleted += sweep(dir, library.getKey(), library.getValue(), minAge);
        }
        return deleted;
    }

    private static int sweep(Path dir, String glob, String library, Duration minAge) {
        int deleted = 0;
        long bytes = 0;
        Instant cutoff = Instant.now().minus(minAge);
        try (DirectoryStream<Path> copies = Files.newDirectoryStream(dir, glob)) {
            for (Path copy : copies) {
                try {
                    if (Files.getLastModifiedTime(copy).toInstant().isBefore(cutoff)) {
                        long size = Files.size(copy);
                        Files.delete(copy);
                        deleted++;
                        bytes += size;
                    }
                } catch (IOException e) {
                    // Another process deleted it first, or it is not ours to delete: leave it.
                }
            }
        } catch (IOException e) {
            log.debug("Cannot look for leftover {} library copies in {}: {}", library, dir, e.toString());
        }
        if (deleted > 0) {
            log.info(
                    "Deleted {} copies of {}'s native library ({} MiB) left in {} by processes that were killed",
                    deleted,
                    library,
                    bytes >> 20,
                    dir);
        }
        return deleted;
    }
}
