package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every valid UTF-8 record_id and experiment can be read back, in pending generations and in the base:
 * lance-core 7.0.0 takes filter text as modified UTF-8, in which NUL and characters outside the BMP break.
 */
class AwkwardIdsTest {
    static final List<String> AWKWARD = List.of(
            "emoji-\uD83D\uDE00-rocket-\uD83D\uDE80",
            "nul-\u0000-inside",
            "cjk-\u4E2D\u6587\u8A18\u9332",
            "rtl-\u200F\u05E9\u05DC\u05D5\u05DD",
            "quote-'; DROP TABLE rollouts; --",
            "url-a/b?c=d&e#f%20g+h",
            "backslash-a\\b%_",
            "long-" + "x".repeat(10_000) + "\uD83D\uDE00");

    @Test
    void awkwardIdsAndExperimentsAreReadableBeforeAndAfterTheMerge() {
        try (RolloutTable table = localTable("awkward", new SimpleMeterRegistry())) {
            List<RolloutRow> rows = new ArrayList<>();
            RolloutGenerator generator = new RolloutGenerator("exp", 8, 1);
            for (int i = 0; i < AWKWARD.size(); i++) {
                Rollout rollout = generator.rollout(i, i);
                rollout.setRecordId(AWKWARD.get(i));
                rollout.setExperiment(AWKWARD.get(i));
                rows.add(new RolloutRow(rollout, 0, i, Instant.now()));
            }
            table.generations().write(TOPIC, 0, 0, AWKWARD.size() - 1, rows, 100);
            assertReadable(table);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            assertThat(table.generations().pending(ShardId.of(TOPIC, 0))).isEmpty();
            assertReadable(table);
        }
    }

    private static void assertReadable(RolloutTable table) {
        for (String id : AWKWARD) {
            assertThat(table.get(id))
                    .as("get %s", id.substring(0, Math.min(30, id.length())))
                    .map(RolloutRow::recordId)
                    .contains(id);
            assertThat(table.list(ListQuery.all(10).withExperiment(id)))
                    .as("list experiment %s", id.substring(0, Math.min(30, id.length())))
                    .extracting(RolloutRow::recordId)
                    .containsExactly(id);
        }
        assertThat(table.get("emoji-\uD83D\uDE00-rocket")).isEmpty();
    }
}
