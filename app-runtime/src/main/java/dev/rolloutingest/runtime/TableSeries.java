package dev.rolloutingest.runtime;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@code table} tag of the few per-table series: a table's own name for the first {@code rollout.metrics.tables.max}
 * tables a process meets, {@value #OTHER} for every table after them, so a deployment of thousands of tables adds a
 * bounded number of series (the cap + 1 per per-table meter) and the totals stay right.
 */
public final class TableSeries {
    public static final String OTHER = "_other";
    /** The cap when no setting gives one. */
    public static final int DEFAULT_MAX = 50;

    private final int max;
    private final Map<String, Boolean> named = new ConcurrentHashMap<>();

    public TableSeries(int max) {
        this.max = max;
    }

    /** The tag value of {@code table}'s series. */
    public String tag(String table) {
        if (named.containsKey(table)) {
            return table;
        }
        synchronized (this) {
            if (named.containsKey(table)) {
                return table;
            }
            if (named.size() < max) {
                named.put(table, Boolean.TRUE);
                return table;
            }
        }
        return OTHER;
    }
}
