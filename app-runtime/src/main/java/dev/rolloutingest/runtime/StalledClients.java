package dev.rolloutingest.runtime;

import com.sun.net.httpserver.HttpExchange;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drops the connection of an HTTP answer whose client stopped reading: a write that blocks longer than
 * {@link HttpLimits#stallTimeoutMs()} gets its connection closed, which fails the write and frees its thread.
 *
 * <p>The JDK server offers no way to close an exchange's connection without writing to it (and a write to a client
 * that reads nothing blocks), so the connection is reached by reflection, which needs
 * {@value #OPENS} (the launcher, the jar's manifest, the Docker image and the build all pass it). Without it a stalled
 * client keeps its thread, as it would with no limit, and the endpoint says so once at start.
 */
final class StalledClients implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(StalledClients.class);
    static final String OPENS = "--add-opens=jdk.httpserver/sun.net.httpserver=ALL-UNNAMED";
    private static final ConnectionCloser CLOSER = ConnectionCloser.resolve();

    private final long limitNanos;
    private final long limitMs;
    private final Set<GuardedBody> writing = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService ticker;

    StalledClients(long limitMs, String threadName) {
        this.limitMs = limitMs;
        this.limitNanos = TimeUnit.MILLISECONDS.toNanos(limitMs);
        this.ticker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
    }

    void start() {
        if (CLOSER == null) {
            log.warn(
                    "This JVM does not let the HTTP endpoint close a connection ({} is missing): a client that stops"
                            + " reading keeps its answer's thread until it disconnects",
                    OPENS);
            return;
        }
        long tick = Math.max(10, Math.min(1_000, limitMs / 4));
        ticker.scheduleWithFixedDelay(this::dropStalled, tick, tick, TimeUnit.MILLISECONDS);
    }

    /** The answer's body of {@code exchange}, its writes watched. */
    OutputStream guard(HttpExchange exchange) {
        return new GuardedBody(exchange, exchange.getResponseBody());
    }

    /**
     * Closes the connection of {@code exchange} without writing to it (an answer that failed part way must not end
     * cleanly); false when this JVM does not allow it.
     */
    static boolean drop(HttpExchange exchange) {
        if (CLOSER == null) {
            return false;
        }
        try {
            CLOSER.close(exchange);
            return true;
        } catch (ReflectiveOperationException | RuntimeException e) {
            log.warn(
                    "Cannot close the connection of {}: {}",
                    exchange.getRequestURI().getPath(),
                    e.toString());
            return false;
        }
    }

    private void dropStalled() {
        long now = System.nanoTime();
        for (GuardedBody body : writing) {
            long since = body.writingSince;
            if (since != 0 && now - since > limitNanos && !body.dropped) {
                body.dropped = true;
                log.warn(
                        "HTTP answer to {} of {} dropped: its client read nothing for {} ms ({})",
                        body.exchange.getRequestURI().getPath(),
                        body.exchange.getRemoteAddress(),
                        limitMs,
                        HttpLimits.STALL_TIMEOUT_MS);
                drop(body.exchange);
            }
        }
    }

    @Override
    public void close() {
        ticker.shutdownNow();
    }

    private interface BodyCall {
        void run() throws IOException;
    }

    /** A body whose blocking calls are timed while they run. */
    private final class GuardedBody extends FilterOutputStream {
        final HttpExchange exchange;
        volatile long writingSince;
        volatile boolean dropped;

        GuardedBody(HttpExchange exchange, OutputStream body) {
            super(body);
            this.exchange = exchange;
        }

        @Override
        public void write(int b) throws IOException {
            timed(() -> out.write(b));
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            timed(() -> out.write(b, off, len));
        }

        @Override
        public void flush() throws IOException {
            timed(out::flush);
        }

        @Override
        public void close() throws IOException {
            timed(out::close);
        }

        /** Runs one blocking call of the body, watched while it runs. */
        private void timed(BodyCall call) throws IOException {
            begin();
            try {
                call.run();
            } catch (IOException e) {
                throw failed(e);
            } finally {
                end();
            }
        }

        private void begin() throws IOException {
            if (dropped) {
                throw stalled(null);
            }
            writingSince = System.nanoTime();
            writing.add(this);
        }

        private void end() {
            writingSince = 0;
            writing.remove(this);
        }

        private IOException failed(IOException e) {
            return dropped ? stalled(e) : e;
        }

        private IOException stalled(IOException cause) {
            return new IOException(
                    "the client read nothing for " + limitMs + " ms (" + HttpLimits.STALL_TIMEOUT_MS
                            + "): its connection was dropped",
                    cause);
        }
    }

    /** The JDK server's connection behind an exchange, reached by reflection. */
    private record ConnectionCloser(Method connection, Method close) {
        static ConnectionCloser resolve() {
            try {
                Class<?> exchangeImpl = Class.forName("sun.net.httpserver.ExchangeImpl");
                Method connection = exchangeImpl.getDeclaredMethod("getConnection");
                connection.setAccessible(true);
                Method close =
                        Class.forName("sun.net.httpserver.HttpConnection").getDeclaredMethod("close");
                close.setAccessible(true);
                // both the HTTP and the HTTPS exchange hold the exchange in a field named impl
                Class.forName("sun.net.httpserver.HttpExchangeImpl")
                        .getDeclaredField("impl")
                        .setAccessible(true);
                Class.forName("sun.net.httpserver.HttpsExchangeImpl")
                        .getDeclaredField("impl")
                        .setAccessible(true);
                return new ConnectionCloser(connection, close);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null; // not opened to us: the endpoint warns at start
            }
        }

        void close(HttpExchange exchange) throws ReflectiveOperationException {
            Field field = exchange.getClass().getDeclaredField("impl");
            field.setAccessible(true);
            close.invoke(connection.invoke(field.get(exchange)));
        }
    }
}
