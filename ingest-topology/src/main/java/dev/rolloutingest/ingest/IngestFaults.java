package dev.rolloutingest.ingest;

import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where crash tests break the ingest app on purpose. Production runs {@link #NONE}; the internal
 * {@code rollout.fault.*} settings build the test variant.
 */
interface IngestFaults {
    IngestFaults NONE = new IngestFaults() {};

    /** Called right after a generation is durable and before its event or offsets are committed. */
    default void afterGenerationWrite() {}

    /** Called on the writer thread as a generation write starts. */
    default void generationWriteStarting() {}

    /** Called on the writer thread after each table's generation of a seal is written. */
    default void afterTableGeneration() {}

    /**
     * Halts the JVM right after its Nth generation write ({@code afterWrites}), or 5 ms into its Nth write
     * while it is in flight ({@code duringWrite}); 0 = never. The crashes exactly-once must survive.
     */
    static IngestFaults of(int afterWrites, int duringWrite) {
        return of(afterWrites, duringWrite, 0);
    }

    /**
     * @param afterTableWrites halt right after the Nth table generation written (a seal of several tables then
     *     stops after some of them); 0 = never
     */
    static IngestFaults of(int afterWrites, int duringWrite, int afterTableWrites) {
        if (afterWrites <= 0 && duringWrite <= 0 && afterTableWrites <= 0) {
            return NONE;
        }
        AtomicInteger tableWrites = new AtomicInteger();
        Logger log = LoggerFactory.getLogger(IngestFaults.class);
        AtomicInteger written = new AtomicInteger();
        AtomicInteger started = new AtomicInteger();
        return new IngestFaults() {
            @Override
            public void afterGenerationWrite() {
                if (written.incrementAndGet() == afterWrites) {
                    log.warn(
                            "Fault injection ({}={}): halting after a generation write",
                            IngestConfig.FAULT_HALT_AFTER_WRITES,
                            afterWrites);
                    Runtime.getRuntime().halt(137);
                }
            }

            @Override
            public void afterTableGeneration() {
                if (tableWrites.incrementAndGet() == afterTableWrites) {
                    log.warn(
                            "Fault injection ({}={}): halting after a table's generation of a seal",
                            IngestConfig.FAULT_HALT_AFTER_TABLE_WRITES,
                            afterTableWrites);
                    Runtime.getRuntime().halt(137);
                }
            }

            @Override
            public void generationWriteStarting() {
                if (started.incrementAndGet() == duringWrite) {
                    Thread halter = new Thread(
                            () -> {
                                try {
                                    Thread.sleep(5);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                log.warn(
                                        "Fault injection ({}={}): halting with a generation write in flight",
                                        IngestConfig.FAULT_HALT_DURING_WRITE,
                                        duringWrite);
                                Runtime.getRuntime().halt(137);
                            },
                            "fault-halt-during-write");
                    halter.setDaemon(true);
                    halter.start();
                }
            }
        };
    }
}
