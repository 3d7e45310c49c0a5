package dev.rolloutingest.runtime;

import dev.rolloutingest.table.RolloutTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.rocksdb.RocksDB;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native libraries an app needs, loaded on a thread of their own as the process starts. lance-core unpacks its
 * 173 MB library from its jar and loads it at the first table open (1.5-2 s), RocksDB its own at the first state store;
 * done in turn they were the largest part of a restart. On their own thread they overlap the configuration, the schema
 * registry's check and class loading; the first use of either waits for a load still under way (class initialisation
 * and RocksDB's own load both block until it is done), so nothing can use a half-loaded library.
 */
public final class NativePreload {
    private static final Logger log = LoggerFactory.getLogger(NativePreload.class);
    private static final AtomicBoolean STARTED = new AtomicBoolean();
    private static final CountDownLatch LOADED = new CountDownLatch(1);

    private NativePreload() {}

    /** Starts the loads once per process; returns at once. */
    public static void start() {
        if (!STARTED.compareAndSet(false, true)) {
            return;
        }
        Thread loader = new Thread(NativePreload::load, "native-preload");
        loader.setDaemon(true);
        loader.start();
    }

    /** Whether both libraries were loaded by the preload within {@code wait}. */
    static boolean loaded(Duration wait) throws InterruptedException {
        return LOADED.await(wait.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void load() {
        try {
            long started = System.nanoTime();
            // both unpack their library into the temp directory; one that is missing would fail lance-core's class
            // for the rest of the process
            Files.createDirectories(Path.of(System.getProperty("java.io.tmpdir")));
            RolloutTable.loadNativeLibrary();
            long lance = System.nanoTime();
            RocksDB.loadLibrary();
            long rocks = System.nanoTime();
            log.info(
                    "Native libraries loaded in the background: lance-core {} ms, RocksDB {} ms",
                    (lance - started) / 1_000_000,
                    (rocks - lance) / 1_000_000);
            LOADED.countDown();
        } catch (Throwable e) {
            // the first use loads it again and fails there, with its own error
            log.warn("Preloading the native libraries failed; they load at first use", e);
        }
    }
}
