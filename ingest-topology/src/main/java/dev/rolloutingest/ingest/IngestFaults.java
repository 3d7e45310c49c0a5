package dev.rolloutingest.ingest;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where crash tests break the ingest app on purpose. Production runs {@link #NONE}; the internal
 * {@code rollout.fault.*} settings build the test variant.
 */
interface IngestFaults {
    IngestFaults NONE = () -> {};

    /** Called right after a generation is durable and before its event or offsets are committed. */
    void afterGenerationWrite();

    /** Halts the JVM right after its Nth generation write (0 = never): the crash exactly-once must survive. */
    static IngestFaults haltAfterWrites(int n) {
        if (n <= 0) {
            return NONE;
        }
        Logger log = LoggerFactory.getLogger(IngestFaults.class);
        java.util.concurrent.atomic.AtomicInteger writes = new java.util.concurrent.atomic.AtomicInteger();
        return () -> {
            if (writes.incrementAndGet() == n) {
                log.warn("Fault injection ({}={}): halting after a generation write", IngestConfig.FAULT_HALT_AFTER_WRITES, n);
                Runtime.getRuntime().halt(137);
            }
        };
    }
}
