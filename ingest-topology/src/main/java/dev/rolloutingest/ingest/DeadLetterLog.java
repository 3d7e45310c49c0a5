package dev.rolloutingest.ingest;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log lines of dead letters, at most one per reason per interval: a misconfigured producer sends every record
 * to the DLQ at its full rate, and a line per record would flood the log. The first dead letter of a reason logs at
 * once; the next line of that reason, an interval later at the earliest, says how many records it stands for. The
 * DLQ topic and {@code rollout_ingest_dlq_records_total} still have every record. Shared by the app's partitions.
 */
final class DeadLetterLog {
    private static final Logger log = LoggerFactory.getLogger(DeadLetterLog.class);

    private final long intervalNanos;
    private final LongSupplier nanoClock;
    private final Consumer<String> sink;
    private final Map<String, Window> byReason = new HashMap<>();

    /** A reason's current interval: when its last line was written and the dead letters since. */
    private static final class Window {
        long loggedAt;
        long suppressed;
    }

    DeadLetterLog(long intervalMs) {
        this(intervalMs, System::nanoTime, log::warn);
    }

    DeadLetterLog(long intervalMs, LongSupplier nanoClock, Consumer<String> sink) {
        this.intervalNanos = intervalMs * 1_000_000L;
        this.nanoClock = nanoClock;
        this.sink = sink;
    }

    /** One dead letter; {@code line} describes it and is built only when a line is written. */
    synchronized void deadLettered(String reason, java.util.function.Supplier<String> line) {
        long now = nanoClock.getAsLong();
        Window window = byReason.get(reason);
        if (intervalNanos == 0) {
            sink.accept(line.get());
            return;
        }
        if (window == null) {
            window = new Window();
            window.loggedAt = now;
            byReason.put(reason, window);
            sink.accept(line.get());
            return;
        }
        if (now - window.loggedAt < intervalNanos) {
            window.suppressed++;
            return;
        }
        long others = window.suppressed;
        window.loggedAt = now;
        window.suppressed = 0;
        sink.accept(line.get()
                + (others == 0
                        ? ""
                        : " (and " + others + " more dead letters with reason " + reason + " since the last line;"
                                + " at most one line per reason every " + intervalNanos / 1_000_000 + " ms)"));
    }

    /** Writes the counts of reasons whose interval has passed with dead letters not yet told of. */
    synchronized void flush() {
        long now = nanoClock.getAsLong();
        for (Map.Entry<String, Window> entry : byReason.entrySet()) {
            Window window = entry.getValue();
            if (window.suppressed > 0 && now - window.loggedAt >= intervalNanos) {
                sink.accept(window.suppressed + " more dead letters with reason " + entry.getKey()
                        + " since the last line (at most one line per reason every " + intervalNanos / 1_000_000
                        + " ms; the DLQ topic has each)");
                window.loggedAt = now;
                window.suppressed = 0;
            }
        }
    }
}
