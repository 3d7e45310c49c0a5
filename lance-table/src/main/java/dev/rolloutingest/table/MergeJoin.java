package dev.rolloutingest.table;

import java.util.List;
import java.util.Locale;
import org.lance.merge.MergeInsertParams;

/**
 * How a merge commit finds the base rows its source replaces. lance-core 7.0.0 chooses its merge-insert plan
 * from the key list: one key column with a scalar index gets the indexed join (each source key looked up in
 * the BTREE, the whole source held in the merge memory pool), anything else a hash join over a scan of the
 * base's key and order columns. Java's {@code MergeInsertParams} has no {@code use_index} switch, so the scan
 * join names record_id twice: the same join, and lance's own index check ({@code join_key_as_scalar_index})
 * no longer applies. Reads keep the index either way.
 *
 * <p>Measured ({@code bench merge-join}, docs/benchmarks.md): for keys spread over the base's range (UUID-like)
 * the scan join commits 2.8-4.2x faster on bases of 1-5M rows; for keys that all sort after the base's
 * (time-ordered ids) it is as fast up to 2M rows and 2x slower at 5M. Its memory and time grow with the base
 * (~90 bytes per base row: ~185 MiB at 2M rows), so above {@code rollout.merge.scan.join.max.base.rows} commits
 * use the index, whose memory is the source's.
 */
enum MergeJoin {
    SCAN(List.of(RolloutSchema.RECORD_ID, RolloutSchema.RECORD_ID)),
    INDEX(List.of(RolloutSchema.RECORD_ID));

    private final List<String> keys;

    MergeJoin(List<String> keys) {
        this.keys = keys;
    }

    /**
     * The merge's merge-insert with this join: a base row is replaced only by a newer source row
     * ({@link RowOrder#MERGE_CONDITION}), new keys are inserted.
     */
    MergeInsertParams params() {
        return new MergeInsertParams(keys)
                .withMatchedUpdateIf(RowOrder.MERGE_CONDITION)
                .withNotMatched(MergeInsertParams.WhenNotMatched.InsertAll);
    }

    /** The scan join for a base of at most {@code scanMaxBaseRows} rows; 0 = always the index join. */
    static MergeJoin forBase(long baseRows, long scanMaxBaseRows) {
        return scanMaxBaseRows > 0 && baseRows <= scanMaxBaseRows ? SCAN : INDEX;
    }

    /**
     * The join for a commit of {@code sourceRows} rows: a source that is small next to the base (the keys the
     * key filter could not rule out, usually none) through the index, whose cost is the source's; otherwise as
     * {@link #forBase}.
     */
    static MergeJoin forCommit(long sourceRows, long baseRows, long scanMaxBaseRows) {
        if (sourceRows * SMALL_SOURCE_FRACTION <= baseRows) {
            return INDEX;
        }
        return forBase(baseRows, scanMaxBaseRows);
    }

    /**
     * A source of at most 1/this of the base's rows is joined through the index. Measured ({@code bench
     * merge-round}, 1M-row base): the index join costs ~170 us per spread key (8,000 keys: 1.4 s), the scan join
     * ~0.4 s whatever the source; so the index wins below ~2,000 keys a million base rows.
     */
    static final long SMALL_SOURCE_FRACTION = 1_000;

    String tag() {
        return name().toLowerCase(Locale.ROOT);
    }
}
