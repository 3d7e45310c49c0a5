package dev.rolloutingest.table;

import java.util.ArrayList;
import java.util.List;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A round's deletes: the base rows older than each tombstone removed (lance deletes of a few hundred keys each)
 * before the merge-insert that marks the round's generations.
 */
final class RoundDeletes {
    private static final Logger log = LoggerFactory.getLogger(RoundDeletes.class);

    private final LanceIo lance;
    private final MergeMeters meters;

    RoundDeletes(LanceIo lance, MergeMeters meters) {
        this.lance = lance;
        this.meters = meters;
    }

    /** Deletes per lance {@code delete} commit: each key is a clause of its filter. */
    static final int DELETES_PER_COMMIT = 256;

    /**
     * Removes the base rows the round's deletes replace (older by {@link RowOrder}: a value of another partition
     * ingested later stays), before the merge-insert that marks the generations: until then the pending deletes hide
     * the keys from reads, and after a crash in between the next round deletes again, which removes nothing more.
     * Returns the base after them (the caller closes it).
     */
    Dataset applyDeletes(List<MergeSource.Row> deletes) {
        long removed = 0;
        for (int from = 0; from < deletes.size(); from += DELETES_PER_COMMIT) {
            List<String> clauses = new ArrayList<>();
            for (MergeSource.Row row : deletes.subList(from, Math.min(deletes.size(), from + DELETES_PER_COMMIT))) {
                clauses.add("(" + RolloutSchema.RECORD_ID + " = " + LsmReader.sqlString(row.keyString()) + " AND "
                        + RowOrder.olderThan(row.partition(), row.offset(), row.ingestedAt()) + ")");
            }
            String filter = String.join(" OR ", clauses);
            try (Dataset latest = lance.openBase()) {
                long matching = latest.countRows(filter);
                if (matching > 0) {
                    latest.delete(filter);
                    removed += matching;
                }
            }
        }
        meters.deletesByResult.get("applied").increment(removed);
        meters.deletesByResult.get("no-op").increment(Math.max(0, deletes.size() - removed));
        log.info("Table {}: {} deletes removed {} base rows", lance.location(), deletes.size(), removed);
        return lance.openBase();
    }
}
