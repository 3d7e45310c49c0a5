package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.ConfigSources;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.merge.CommitStage;
import dev.rolloutingest.table.merge.MergeResult;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The merge-worker as crash tests run it in a child JVM: {@code FaultyMergeApp [config.properties]}, the faults named by
 * env vars (0 or absent = never):
 * <ul>
 *   <li>{@code ROLLOUT_FAULT_HALT_AFTER_MERGES}: halt right after the Nth committed pass, before its event and
 *       offsets commit;
 *   <li>{@code ROLLOUT_FAULT_HALT_AFTER_APPENDS}: halt between a round's two Lance commits (its rows and its marks),
 *       the Nth over all tables.
 * </ul>
 */
public final class FaultyMergeApp {
    private static final Logger log = LoggerFactory.getLogger(FaultyMergeApp.class);

    private FaultyMergeApp() {}

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> env = System.getenv();
        MergeConfig config = MergeConfig.load(ConfigSources.file(args.length > 0 ? Path.of(args[0]) : null), env);
        MergeFaults faults = halting(
                Integer.parseInt(env.getOrDefault("ROLLOUT_FAULT_HALT_AFTER_MERGES", "0")),
                Integer.parseInt(env.getOrDefault("ROLLOUT_FAULT_HALT_AFTER_APPENDS", "0")));
        StreamsRuntime.runUntilTerminated(new MergeApp(config, faults).start(), "rollout-merge");
    }

    static MergeFaults halting(int afterMerges, int afterAppends) {
        AtomicInteger passes = new AtomicInteger();
        AtomicInteger appends = new AtomicInteger();
        return new MergeFaults() {
            @Override
            public void tableOpened(RolloutTable table) {
                if (afterAppends <= 0) {
                    return;
                }
                TableSeams.failMergeCommitsAt(table, stage -> {
                    if (stage == CommitStage.APPENDED && appends.incrementAndGet() == afterAppends) {
                        log.warn("Fault injection: halting after the rows of round {}, before its marks", afterAppends);
                        Runtime.getRuntime().halt(137);
                    }
                });
            }

            @Override
            public void passCommitted(MergeResult result) {
                if (afterMerges > 0 && passes.incrementAndGet() == afterMerges) {
                    log.warn("Fault injection: halting after committed merge pass {}", afterMerges);
                    Runtime.getRuntime().halt(137);
                }
            }
        };
    }
}
