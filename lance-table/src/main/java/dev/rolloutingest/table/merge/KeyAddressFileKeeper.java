package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.KeyFilter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.lance.Dataset;
import org.lance.Fragment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A table's {@link KeyAddressFile} over time: the newest in the table's folder after a start, and a new one built in
 * the background when the one it has is stale (a compaction moved a quarter of its rows, a quarter as many rows are
 * newer than it) or has drifted (a commit read more of its rows than it trusted), one build at a time over every
 * table.
 *
 * <p>Guarded by its owner's lock ({@link KeyAddresses}, given as {@code lock}): a finished build replaces the file and
 * tells the owner ({@code adopted}) under that lock, so no lookup sees a file without the fragment states it was built
 * from.
 */
final class KeyAddressFileKeeper {
    private static final Logger log = LoggerFactory.getLogger(KeyAddressFileKeeper.class);
    /** A failed build is tried again after this long. */
    private static final long RETRY_NANOS = 60_000_000_000L;
    /** Builds of every table's file, one at a time: each reads a whole base's keys. */
    private static final ExecutorService BUILDS = Executors.newSingleThreadExecutor(task -> {
        Thread thread = new Thread(task, "key-address-file-build");
        thread.setDaemon(true);
        return thread;
    });

    private final Object lock;
    private final Path folder;
    private final long maxBytes;
    /** The memory a build sorts in (a bucket of the file at most). */
    private final long bucketBytes;

    private final ToLongFunction<KeyFilter.Hash> slotHash;
    private final Supplier<Dataset> openBase;
    private final Consumer<KeyAddressFile> adopted;
    private final Timer builds;

    private KeyAddressFile file;
    /** Whether the folder was looked in for a file since the last release. */
    private boolean looked;

    private CompletableFuture<Void> building = CompletableFuture.completedFuture(null);
    private long nextBuildNanos;
    /** When the last build in this process ended, and what it took. */
    private long lastBuiltNanos;

    private long lastBuildNanos;
    private boolean tooLargeLogged;
    private volatile boolean closed;

    /**
     * @param folder the table's own folder of files (kept across restarts)
     * @param maxBytes no file for a base whose file would be larger
     * @param bucketBytes the memory a build sorts its entries in
     * @param openBase the base at its latest version, for a build
     * @param adopted told of each file taken up (or null when let go of), under {@code lock}
     */
    KeyAddressFileKeeper(
            Object lock,
            MeterRegistry meters,
            Path folder,
            long maxBytes,
            long bucketBytes,
            ToLongFunction<KeyFilter.Hash> slotHash,
            Supplier<Dataset> openBase,
            Consumer<KeyAddressFile> adopted) {
        this.lock = lock;
        this.folder = folder;
        this.maxBytes = maxBytes;
        this.bucketBytes = bucketBytes;
        this.slotHash = slotHash;
        this.openBase = openBase;
        this.adopted = adopted;
        this.builds = Timer.builder("rollout.merge.key.addresses.file.builds")
                .description("Builds of a table's file of every base key's address, in the background")
                .register(meters);
    }

    /** The file, the newest in the folder after a start or a release; null when there is none. */
    KeyAddressFile file() {
        if (!looked) {
            looked = true;
            file = KeyAddressFile.newest(folder);
            adopted.accept(file);
        }
        return file;
    }

    /**
     * Starts a build in the background, unless one is under way, the last failed less than a minute ago, the base is
     * larger than the file may be, or the file is fresh: its fragments still hold at least 3/4 of the rows it holds
     * (a compaction moved fewer) and the fragments newer than it fewer than 1/4, and it has not {@code drifted} (more
     * of its rows read than trusted), or did so less than ten of its builds' time after the last build.
     */
    void buildIfDue(List<Fragment> fragments, boolean drifted) {
        if (closed || !building.isDone() || System.nanoTime() - nextBuildNanos < 0) {
            return;
        }
        long rows = 0;
        long covered = 0;
        int maxCovered = file == null ? Integer.MIN_VALUE : file.maxFragmentId();
        for (Fragment fragment : fragments) {
            long physical = fragment.metadata().getPhysicalRows();
            rows += physical;
            if (fragment.getId() <= maxCovered) {
                covered += physical;
            }
        }
        if (KeyAddressFile.bytesFor(rows) > maxBytes) {
            if (!tooLargeLogged) {
                tooLargeLogged = true;
                log.info(
                        "Table {}: no file of key addresses: {} base rows need {} bytes, more than {}; updates of old"
                                + " keys go through the record_id index",
                        folder.getFileName(),
                        rows,
                        KeyAddressFile.bytesFor(rows),
                        TableSettings.MERGE_KEY_ADDRESSES_FILE_MAX_BYTES);
            }
            return;
        }
        boolean fresh = file != null && covered >= file.entries() / 4 * 3 && rows - covered <= file.entries() / 4;
        // a build reads the whole base: after a drift, one at most a tenth of the time
        boolean driftDue = drifted && System.nanoTime() - lastBuiltNanos >= 10 * lastBuildNanos;
        if (fresh && !driftDue) {
            return;
        }
        building = CompletableFuture.runAsync(this::build, BUILDS);
    }

    private void build() {
        long started = System.nanoTime();
        try (Dataset base = openBase.get()) {
            KeyAddressFile built =
                    KeyAddressFile.build(base, base.getFragments(), folder, bucketBytes, slotHash, () -> closed);
            builds.record(Duration.ofNanos(System.nanoTime() - started));
            log.info(
                    "Table {}: built the file of {} key addresses at version {} in {} ms",
                    folder.getFileName(),
                    built.entries(),
                    built.version(),
                    (System.nanoTime() - started) / 1_000_000);
            synchronized (lock) {
                lastBuiltNanos = System.nanoTime();
                lastBuildNanos = lastBuiltNanos - started;
                adopt(built);
            }
        } catch (Exception e) {
            log.warn(
                    "Table {}: building the file of key addresses failed; tried again in a minute",
                    folder.getFileName(),
                    e);
            synchronized (lock) {
                nextBuildNanos = System.nanoTime() + RETRY_NANOS;
            }
        }
    }

    private void adopt(KeyAddressFile built) {
        if (closed) {
            built.close();
            return;
        }
        if (file != null) {
            file.close();
        }
        file = built;
        looked = true;
        adopted.accept(built);
        built.deleteOthers();
    }

    /** The file as last taken up, without looking in the folder; null when there is none. */
    KeyAddressFile current() {
        return file;
    }

    /** The build under way, or the last one. */
    CompletableFuture<Void> building() {
        return building;
    }

    /** Lets go of the file (its folder is looked in again at the next lookup). */
    void release() {
        if (file != null) {
            file.close();
            file = null;
        }
        looked = false;
    }

    /** Stops a build under way, waiting for it (outside the lock: the build takes it to finish). */
    void close() {
        closed = true;
        CompletableFuture<Void> last;
        synchronized (lock) {
            last = building;
        }
        try {
            last.get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.warn(
                    "Table {}: a build of the file of key addresses still runs after a minute of closing",
                    folder.getFileName());
        }
    }

    /** The folder's name, for logs. */
    Path folderName() {
        return folder.getFileName();
    }

    /** The file's memory: 0 without one. */
    long memoryBytes() {
        return file == null ? 0 : file.memoryBytes();
    }

    /** The file's bytes on disk: 0 without one. */
    long fileBytes() {
        return file == null ? 0 : file.fileBytes();
    }
}
