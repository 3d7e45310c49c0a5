package dev.rolloutingest.ingest;

import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads that write sealed batches as generations, so a stream thread goes on consuming and decoding
 * while Lance writes (at most one write per partition at a time; the partition's next seal waits for it).
 * With 0 threads every write runs on the stream thread that sealed it.
 */
final class SealWriters implements AutoCloseable {
    private final ExecutorService pool;

    SealWriters(int threads) {
        AtomicInteger n = new AtomicInteger();
        this.pool = threads == 0
                ? null
                : Executors.newFixedThreadPool(threads, r -> {
                    Thread t = new Thread(r, "seal-writer-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
    }

    <T> Future<T> submit(Callable<T> write) {
        if (pool == null) {
            FutureTask<T> inline = new FutureTask<>(write);
            inline.run();
            return inline;
        }
        return pool.submit(write);
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
            try {
                pool.awaitTermination(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
