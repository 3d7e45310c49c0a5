package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.AddedColumns;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import org.apache.arrow.vector.types.pojo.Field;
import org.lance.Dataset;

/**
 * The columns producers added to the table, as reads of whole rows see them: read once per dataset handle, taken with
 * every whole row, and null in a row of a dataset written before them, so a reader sees one shape for every row.
 */
final class AddedColumnReads {
    private AddedColumnReads() {}

    private static final List<String> ROW_WITHOUT_PAYLOAD = RolloutSchema.columnsWithoutPayload();

    /**
     * The added columns of each open dataset handle, read once: a handle's schema does not change (a newer base is
     * a new handle), and {@code getSchema} crosses JNI and exports an Arrow schema on every call.
     */
    private static final Map<Dataset, List<Field>> ADDED_BY_HANDLE = Collections.synchronizedMap(new WeakHashMap<>());

    static List<Field> of(Dataset dataset) {
        return ADDED_BY_HANDLE.computeIfAbsent(dataset, d -> AddedColumns.of(d.getSchema()));
    }

    static List<String> names(Dataset dataset) {
        return of(dataset).stream().map(Field::getName).toList();
    }

    /**
     * A whole row's columns (the contract's, with or without the payload) also take the columns producers added
     * that this dataset has; a generation written before a column was added lacks it and reads null there.
     */
    static List<String> withAdded(Dataset dataset, List<String> columns) {
        if (!columns.containsAll(ROW_WITHOUT_PAYLOAD)) {
            return columns;
        }
        List<String> added = names(dataset);
        if (added.isEmpty()) {
            return columns;
        }
        List<String> all = new ArrayList<>(columns);
        all.addAll(added);
        return all;
    }

    /**
     * The row with every column producers added to the table, null where its dataset (a generation written before
     * the column) has none: a reader sees one shape for every row.
     */
    static RolloutRow withNulls(RolloutRow row, List<String> tableAdded) {
        if (tableAdded.isEmpty() || row.added().keySet().containsAll(tableAdded)) {
            return row;
        }
        Map<String, Object> values = new LinkedHashMap<>();
        tableAdded.forEach(name -> values.put(name, null));
        values.putAll(row.added());
        return new RolloutRow(
                row.rollout(),
                row.sourcePartition(),
                row.sourceOffset(),
                row.ingestedAt(),
                Collections.unmodifiableMap(values));
    }
}
