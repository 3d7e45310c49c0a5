package dev.rolloutingest.runtime;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the local stores of an app's last run are worth keeping: a file beside the application's Streams state
 * directory, written once Streams closed cleanly (every store checkpointed) and removed when it starts. Absent at a
 * start, the last run was killed. Under exactly-once its stores then carry no checkpoint: Streams would wipe them
 * itself, but only once their task is assigned, and it then makes the whole group rebalance, which lasts until every
 * other member's next heartbeat (1-3 s of each restart). Wiped before the start instead, they are restored from their
 * changelogs and the instance takes its partitions back as the same static member, without a rebalance.
 */
final class CleanCloseMark {
    private static final Logger log = LoggerFactory.getLogger(CleanCloseMark.class);

    private final String app;
    private final Path appStateDir;
    private final Path mark;
    private final boolean lastRunKilled;

    /** Before the app's {@link KafkaStreams} is built (which creates its state directory). */
    CleanCloseMark(String app, Properties props) {
        this.app = app;
        Object stateDir = props.getOrDefault(
                StreamsConfig.STATE_DIR_CONFIG,
                StreamsConfig.configDef().defaultValues().get(StreamsConfig.STATE_DIR_CONFIG));
        String applicationId = String.valueOf(props.get(StreamsConfig.APPLICATION_ID_CONFIG));
        this.appStateDir = Path.of(String.valueOf(stateDir)).resolve(applicationId);
        this.mark = appStateDir.resolveSibling(applicationId + ".closed-cleanly");
        this.lastRunKilled = Files.isDirectory(appStateDir) && !Files.exists(mark);
    }

    /**
     * Before {@link KafkaStreams#start()} (in state CREATED): wipes the local stores if the last run did not close
     * cleanly, and removes the mark (a kill from now on leaves none). Returns whether it wiped.
     */
    boolean wipeIfNotClosedCleanly(KafkaStreams streams) {
        try {
            if (lastRunKilled) {
                // the process id file stays (KafkaStreams#cleanUp deletes task and global stores only): the
                // transactional ids stay the same, so the killed run's open transactions are aborted at once
                streams.cleanUp();
                log.info(
                        "{}: the last run did not close cleanly; its local stores were wiped before the start and are"
                                + " restored from their changelogs, without a group rebalance",
                        app);
            }
            Files.deleteIfExists(mark);
            return lastRunKilled;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot remove " + mark, e);
        }
    }

    /** After Streams closed within its timeout: its stores are checkpointed and kept at the next start. */
    void closedCleanly() {
        try {
            Files.createDirectories(mark.getParent());
            Files.writeString(mark, "");
        } catch (IOException e) {
            // the next start wipes the stores and restores them: slower, never wrong
            log.warn("{}: cannot write {}: {}", app, mark, e.toString());
        }
    }
}
