package dev.rolloutingest.table.maintenance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class KeyIndexTiersTest {

    @Test
    void newFragmentsGetASegmentOfTheirOwnWhileFewerThanTheMaximumAreOpen() {
        KeyIndexTiers tiers = new KeyIndexTiers(0, 3, 1_000);
        assertThat(tiers.toMerge(List.of(5_000L, 10L, 20L), Long::longValue, 10))
                .isEmpty();
    }

    @Test
    void atTheMaximumTheOpenSegmentsAreMergedSmallestFirstUpToTheCapAndFullOnesNever() {
        KeyIndexTiers tiers = new KeyIndexTiers(0, 3, 1_000);
        // 600 is full (over half the cap); 300 would take the merge past the cap
        assertThat(tiers.toMerge(List.of(600L, 300L, 20L, 10L, 200L), Long::longValue, 500))
                .containsExactly(10L, 20L, 200L);
    }

    @Test
    void overAGrowingTableNoTakeUpReindexesMoreThanTheCapAndTheOpenSegmentsStayBounded() {
        KeyIndexTiers tiers = new KeyIndexTiers(0, 8, 2_000_000);
        List<Long> segments = new ArrayList<>();
        long reindexed = 0;
        long added = 0;
        for (int takeUp = 0; takeUp < 1_000; takeUp++) {
            long newRows = 90_000;
            List<Long> merged = tiers.toMerge(segments, Long::longValue, newRows);
            long built = newRows + merged.stream().mapToLong(Long::longValue).sum();
            assertThat(built).isLessThanOrEqualTo(tiers.maxSegmentRows());
            merged.forEach(segments::remove);
            segments.add(built);
            reindexed += built;
            added += newRows;
            assertThat(segments.stream().filter(tiers::open)).hasSizeLessThanOrEqualTo(tiers.maxOpenSegments());
        }
        // 90M rows: ~90 full segments (over 1M rows each), each row indexed a few times, never the whole table
        assertThat(segments).hasSizeLessThan(100);
        assertThat((double) reindexed / added).isLessThan(4.0);
    }

    @Test
    void aTakeUpIsNeededOnlyPastTheUnindexedAllowance() {
        KeyIndexTiers tiers = new KeyIndexTiers(100, 8, 2_000_000);
        assertThat(tiers.takeUp(100)).isFalse();
        assertThat(tiers.takeUp(101)).isTrue();
        assertThat(new KeyIndexTiers(0, 8, 1).takeUp(0)).isFalse();
    }

    @Test
    void nonsenseLimitsAreRefused() {
        assertThatThrownBy(() -> new KeyIndexTiers(0, 0, 10)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new KeyIndexTiers(0, 2, 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
