package dev.rolloutingest.ingest;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.table.TableSeams;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ingest app as crash tests run it in a child JVM: {@code FaultyIngestApp [config.properties]}, the faults named by
 * env vars (0 or absent = never):
 * <ul>
 *   <li>{@code ROLLOUT_FAULT_HALT_AFTER_WRITES}: halt right after the Nth generation write, before the generation is
 *       announced or its offsets committed;
 *   <li>{@code ROLLOUT_FAULT_HALT_DURING_WRITE}: halt 5 ms into the Nth generation write, while it runs on its writer
 *       thread and the stream thread goes on;
 *   <li>{@code ROLLOUT_FAULT_HALT_AFTER_TABLE_WRITES}: halt right after the Nth table generation is written, a seal of
 *       several tables then stopping after some of them;
 *   <li>{@code ROLLOUT_FAULT_UNWRITABLE_RECORD_ID_PREFIX}: every generation write holding a record_id with this prefix
 *       fails as if the table refused the row.
 * </ul>
 */
public final class FaultyIngestApp {
    private static final Logger log = LoggerFactory.getLogger(FaultyIngestApp.class);

    private FaultyIngestApp() {}

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> env = System.getenv();
        IngestConfig config = IngestConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), env);
        IngestApp app = new IngestApp(
                config,
                halting(
                        number(env, "ROLLOUT_FAULT_HALT_AFTER_WRITES"),
                        number(env, "ROLLOUT_FAULT_HALT_DURING_WRITE"),
                        number(env, "ROLLOUT_FAULT_HALT_AFTER_TABLE_WRITES")));
        String unwritable = env.getOrDefault("ROLLOUT_FAULT_UNWRITABLE_RECORD_ID_PREFIX", "");
        if (!unwritable.isEmpty()) {
            TableSeams.failDatasetWrites(app.tables().only(), UnwritableRows.withRecordIdPrefix(unwritable));
        }
        StreamsRuntime.runUntilTerminated(app.start(), "rollout-ingest");
    }

    private static int number(Map<String, String> env, String name) {
        return Integer.parseInt(env.getOrDefault(name, "0"));
    }

    /** Halts the JVM at the Nth write of each kind (0 = never): the crashes exactly-once must survive. */
    static IngestFaults halting(int afterWrites, int duringWrite, int afterTableWrites) {
        if (afterWrites <= 0 && duringWrite <= 0 && afterTableWrites <= 0) {
            return IngestFaults.NONE;
        }
        AtomicInteger written = new AtomicInteger();
        AtomicInteger tableWrites = new AtomicInteger();
        AtomicInteger started = new AtomicInteger();
        return new IngestFaults() {
            @Override
            public void afterGenerationWrite() {
                if (written.incrementAndGet() == afterWrites) {
                    log.warn(
                            "Fault injection (ROLLOUT_FAULT_HALT_AFTER_WRITES={}): halting after a generation write",
                            afterWrites);
                    Runtime.getRuntime().halt(137);
                }
            }

            @Override
            public void afterTableGeneration() {
                if (tableWrites.incrementAndGet() == afterTableWrites) {
                    log.warn(
                            "Fault injection (ROLLOUT_FAULT_HALT_AFTER_TABLE_WRITES={}): halting after a table's"
                                    + " generation of a seal",
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
                                        "Fault injection (ROLLOUT_FAULT_HALT_DURING_WRITE={}): halting with a"
                                                + " generation write in flight",
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
