package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutRow;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The newest pending row of each key, read whole from every pending generation of a snapshot (memory: the pending
 * rows, bounded by the pending hard cap): what a page or a count holds the base rows against.
 */
final class PendingRows {
    private final RowScans scans;

    PendingRows(RowScans scans) {
        this.scans = scans;
    }

    /** The newest pending row per key ({@link NewestWins}) of the given columns, generations read newest first. */
    Map<String, RolloutRow> newestByKey(ReadCatalog.Snapshot snapshot, List<String> columns) {
        Map<String, RolloutRow> newest = new LinkedHashMap<>();
        for (ReadCatalog.Pending generation : newestFirst(snapshot)) {
            scans.forEachRow(generation.listed(), null, columns, row -> {
                newest.merge(row.recordId(), row, (current, candidate) -> NewestWins.winner(candidate, current));
                return true;
            });
        }
        return newest;
    }

    /** Pending generations of every shard, newest first within a shard, shards in order. */
    private static List<ReadCatalog.Pending> newestFirst(ReadCatalog.Snapshot snapshot) {
        List<ReadCatalog.Pending> all = new ArrayList<>();
        snapshot.pendingByShard.values().forEach(shard -> {
            for (int i = shard.size() - 1; i >= 0; i--) {
                all.add(shard.get(i));
            }
        });
        return all;
    }
}
