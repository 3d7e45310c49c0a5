package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.ArrayList;
import java.util.List;

/**
 * A list read: optional equality filters, a page, and whether the payload column is read at all.
 * Filters are applied after newest-wins de-duplication, so a replaced row never matches.
 */
public record ListQuery(String experiment, String rolloutId, int limit, long offset, boolean includePayload) {
    public ListQuery {
        if (limit <= 0) {
            throw new IllegalArgumentException("limit must be > 0, was " + limit);
        }
        if (offset < 0) {
            throw new IllegalArgumentException("offset must be >= 0, was " + offset);
        }
    }

    public static ListQuery all(int limit) {
        return new ListQuery(null, null, limit, 0, false);
    }

    public ListQuery withExperiment(String value) {
        return new ListQuery(value, rolloutId, limit, offset, includePayload);
    }

    public ListQuery withPayload() {
        return new ListQuery(experiment, rolloutId, limit, offset, true);
    }

    /** The filter as a Lance SQL predicate, for the base table only (nothing older can replace its rows). */
    String baseFilter() {
        List<String> terms = new ArrayList<>();
        if (experiment != null) {
            terms.add(RolloutSchema.EXPERIMENT + " = " + Filters.string(experiment));
        }
        if (rolloutId != null) {
            terms.add(RolloutSchema.ROLLOUT_ID + " = " + Filters.string(rolloutId));
        }
        return terms.isEmpty() ? null : String.join(" AND ", terms);
    }

    boolean matches(RolloutRow row) {
        return (experiment == null || experiment.equals(row.rollout().getExperiment()))
                && (rolloutId == null || rolloutId.equals(row.rollout().getRolloutId()));
    }
}
