package dev.rolloutingest.table.rows;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The rule on its own: partition, offset, ingest time. */
class NewestWinsTest {
    private static NewestWins.Order at(int partition, long offset, long micros) {
        return new NewestWins.Order(partition, offset, micros);
    }

    @Test
    void inOnePartitionTheHigherOffsetWinsWhateverTheIngestTimes() {
        assertThat(at(0, 8, 100).replaces(at(0, 7, 100))).isTrue();
        assertThat(at(0, 8, 50).replaces(at(0, 7, 100)))
                .as("the clock went back")
                .isTrue();
        assertThat(at(0, 7, 100).replaces(at(0, 8, 50))).isFalse();
        assertThat(NewestWins.offsetsDecide(3, 3)).isTrue();
        assertThat(NewestWins.replacesInPartition(8, 7)).isTrue();
    }

    @Test
    void acrossPartitionsTheLaterIngestTimeWinsThenTheHigherPartition() {
        assertThat(at(0, 1, 101).replaces(at(1, 900, 100))).isTrue();
        assertThat(at(1, 900, 100).replaces(at(0, 1, 101))).isFalse();
        assertThat(at(1, 0, 100).replaces(at(0, 5, 100)))
                .as("the same microsecond")
                .isTrue();
        assertThat(at(0, 5, 100).replaces(at(1, 0, 100))).isFalse();
        assertThat(NewestWins.offsetsDecide(0, 1)).isFalse();
    }

    @Test
    void aRowNeverReplacesTheSameRecordOfTheLog() {
        assertThat(at(2, 7, 100).replaces(at(2, 7, 100))).isFalse();
        assertThat(at(2, 7, 100).sameRow(at(2, 7, 999))).isTrue();
        assertThat(at(2, 7, 100).sameRow(at(1, 7, 100))).isFalse();
    }

    @Test
    void rowObjectsAreOrderedByTheirMicroseconds() {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, 1);
        Instant t = Instant.parse("2026-12-01T00:00:00.000001Z");
        RolloutRow earlier = new RolloutRow(generator.rollout(0, 0), 1, 9, t);
        RolloutRow later = new RolloutRow(generator.rollout(0, 0), 0, 2, t.plusNanos(1_000));
        assertThat(NewestWins.replaces(later, earlier)).isTrue();
        assertThat(NewestWins.replaces(earlier, later)).isFalse();
        assertThat(NewestWins.replaces(later, earlier))
                .isEqualTo(NewestWins.replaces(0, 2, Timestamps.micros(t) + 1, 1, 9, Timestamps.micros(t)));
    }
}
