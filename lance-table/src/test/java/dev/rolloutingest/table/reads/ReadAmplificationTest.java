package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import io.micrometer.core.instrument.distribution.CountAtBucket;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Arrays;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.Logger;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ReadAmplificationTest {
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final java.util.List<String> warnings = new java.util.concurrent.CopyOnWriteArrayList<>();
    private AbstractAppender appender;

    @BeforeEach
    void captureWarnings() {
        appender = new AbstractAppender("capture", null, null, true, null) {
            @Override
            public void append(LogEvent event) {
                if (event.getLevel() == Level.WARN) {
                    warnings.add(event.getMessage().getFormattedMessage());
                }
            }
        };
        appender.start();
        ((Logger) LogManager.getLogger(PendingBacklog.class)).addAppender(appender);
    }

    @AfterEach
    void release() {
        ((Logger) LogManager.getLogger(PendingBacklog.class)).removeAppender(appender);
    }

    private RolloutTable table(String name, int warn, int max) {
        return RolloutTable.createOrOpen(
                TableLocation.local(freshDir(name)),
                TableSettings.DEFAULTS
                        .with(TableSettings.PENDING_WARN_GENERATIONS, warn)
                        .with(TableSettings.PENDING_MAX_GENERATIONS, max),
                meters);
    }

    @Test
    void everyReadSamplesEachShardsPendingCount() {
        try (RolloutTable table = table("sample", 256, 2048)) {
            for (int g = 0; g < 10; g++) {
                write(table, 0, g, g, 5);
            }
            write(table, 1, 0, 0, 5);
            table.get("exp-1");
            table.list(ListQuery.all(5));
            var summary = meters.get("rollout.wal.pending.generations").summary();
            assertThat(summary.count()).isEqualTo(4); // 2 reads x 2 shards
            assertThat(summary.max()).isEqualTo(10);
            assertThat(Arrays.stream(summary.takeSnapshot().histogramCounts()).mapToDouble(CountAtBucket::bucket))
                    .contains(8.0, 4096.0);
            assertThat(meters.get("rollout.wal.pending.generations")
                            .summary()
                            .getId()
                            .getTags())
                    .isEmpty();
        }
    }

    @Test
    void aShardMergedAndCollectedToNothingIsStillSampledAsZero() throws Exception {
        try (RolloutTable table = table("sample-zero", 256, 2048)) {
            write(table, 0, 0, 0, 5);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(8, 0));
            Thread.sleep(50);
            assertThat(table.maintenance()
                            .collectGarbage(java.time.Duration.ofMillis(10))
                            .deletedGenerations())
                    .isEqualTo(1);
            table.get("exp-0");
            var summary = meters.get("rollout.wal.pending.generations").summary();
            assertThat(summary.count()).isEqualTo(1);
            assertThat(summary.max()).isZero();
        }
    }

    @Test
    void aReadWarnsOncePerShardAtTheThresholdWithTableAndShard() {
        try (RolloutTable table = table("warn", 3, 0)) {
            for (int g = 0; g < 3; g++) {
                write(table, 0, g, g, 5);
                write(table, 1, g, g, 5);
            }
            write(table, 2, 0, 0, 5);
            table.get("exp-2");
            assertThat(warnings).hasSize(2);
            assertThat(warnings)
                    .allSatisfy(w -> assertThat(w).contains(table.location().uri()));
            assertThat(warnings).anySatisfy(w -> assertThat(w).contains(ShardId.of(TOPIC, 0)));
            assertThat(warnings).anySatisfy(w -> assertThat(w).contains(ShardId.of(TOPIC, 1)));
            assertThat(warnings).noneSatisfy(w -> assertThat(w).contains(ShardId.of(TOPIC, 2)));
        }
    }

    @Test
    void zeroDisablesTheWarnButNeverTheMetric() {
        try (RolloutTable table = table("nowarn", 0, 0)) {
            for (int g = 0; g < 5; g++) {
                write(table, 0, g, g, 5);
            }
            table.get("exp-1");
            assertThat(warnings).isEmpty();
            assertThat(meters.get("rollout.wal.pending.generations").summary().count())
                    .isEqualTo(1);
        }
    }

    @Test
    void aReadOverTheHardCapFailsFastWithATypedError() {
        try (RolloutTable table = table("cap", 0, 4)) {
            for (int g = 0; g < 5; g++) {
                write(table, 0, g, g, 5);
            }
            assertThatThrownBy(() -> table.get("exp-1"))
                    .isInstanceOf(RolloutTableException.PendingBacklogTooLarge.class)
                    .hasMessageContaining("5 pending")
                    .hasMessageContaining(ShardId.of(TOPIC, 0))
                    .hasMessageContaining(TableSettings.PENDING_MAX_KEY);
            assertThatThrownBy(() -> table.list(ListQuery.all(5)))
                    .isInstanceOf(RolloutTableException.PendingBacklogTooLarge.class);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(2, 0));
            assertThat(table.get("exp-1")).isPresent();
        }
    }
}
