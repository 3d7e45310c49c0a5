package dev.rolloutingest.table.rows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/** Lance filter text for the values reads and merges look for. */
public final class Filters {
    private Filters() {}

    /** {@code record_id IN (...)} filters over the keys, 256 keys each (an indexed lookup per key). */
    public static List<String> recordIdIn(List<String> keys) {
        List<String> filters = new ArrayList<>();
        for (int from = 0; from < keys.size(); from += 256) {
            List<String> chunk = keys.subList(from, Math.min(keys.size(), from + 256));
            filters.add(RolloutSchema.RECORD_ID + " IN ("
                    + String.join(", ", chunk.stream().map(Filters::string).toList()) + ")");
        }
        return filters;
    }

    /** {@code record_id IN (...)} over every key in one list (lance evaluates it as a set). */
    public static String recordIdInOneList(java.util.Collection<String> keys) {
        StringBuilder in = new StringBuilder(RolloutSchema.RECORD_ID).append(" IN (");
        boolean first = true;
        for (String key : keys) {
            if (!first) {
                in.append(", ");
            }
            in.append(string(key));
            first = false;
        }
        return in.append(')').toString();
    }

    /** A timestamp literal comparable with the table's timestamp columns (microseconds, UTC). */
    public static String timestamp(java.time.Instant at) {
        return "TIMESTAMP '" + at + "'";
    }

    /**
     * A string literal for a Lance filter that survives the JNI boundary: lance-core 7.0.0 receives filter
     * text as Java's modified UTF-8, in which a NUL or a character outside the Basic Multilingual Plane
     * (emoji) is not valid UTF-8 and the scan fails. Such values travel as hex bytes and are cast back;
     * DataFusion folds the cast into a plain literal, so a scalar index on the column is still used.
     */
    public static String string(String value) {
        boolean safe = value.chars().allMatch(c -> c != 0 && !Character.isSurrogate((char) c));
        if (safe) {
            return "'" + value.replace("'", "''") + "'";
        }
        return "arrow_cast(decode('" + HexFormat.of().formatHex(value.getBytes(StandardCharsets.UTF_8))
                + "', 'hex'), 'Utf8')";
    }
}
