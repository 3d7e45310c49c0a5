package dev.rolloutingest.bench;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.SharedByTables;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeCapacity;
import dev.rolloutingest.table.storage.SharedLanceCache;
import java.time.Duration;
import java.util.List;

/** What the merge benches of many tables share: one process's merge capacity, and the rounds its tables committed. */
final class BenchMerges {
    private BenchMerges() {}

    /** The cache and merge capacity of one merge-worker process, as its catalog makes them. */
    static SharedByTables shared(TableSettings settings, int threads, int parallel) {
        return new SharedByTables(
                new SharedLanceCache(settings.readCacheBytes()),
                new MergeCapacity(threads, parallel, Duration.ofMillis(settings.mergeThreadsIdleStopMs())));
    }

    /** Rounds committed over the tables. */
    static long rounds(List<RolloutTable> tables) {
        return tables.stream()
                .map(t -> t.merges().lastRound())
                .mapToLong(r -> r == null ? 0 : r.round())
                .sum();
    }
}
