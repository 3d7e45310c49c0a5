package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;

/** The schema of a {@link RowStream}: the columns a scan or tail asked for, checked against the base. */
final class StreamSchema {
    private StreamSchema() {}

    /**
     * The answer's schema: the columns asked for (every column of the base when none is), as the base declares them;
     * a tail's also has {@link RowStream#DELETED} and always the record_id.
     */
    static Schema of(Dataset base, List<String> asked, boolean tail) {
        Map<String, Field> byName = new HashMap<>();
        List<String> known = new ArrayList<>();
        for (Field field : base.getSchema().getFields()) {
            byName.put(field.getName(), field);
            known.add(field.getName());
        }
        Set<String> names = new LinkedHashSet<>();
        if (tail) {
            names.add(RolloutSchema.RECORD_ID);
        }
        if (asked.isEmpty()) {
            names.addAll(known);
        }
        for (String name : asked) {
            if (!byName.containsKey(name)) {
                throw new IllegalArgumentException(
                        "unknown column '" + name + "' (columns: " + String.join(", ", known) + ")");
            }
            if (!names.add(name) && !(tail && name.equals(RolloutSchema.RECORD_ID))) {
                throw new IllegalArgumentException("column '" + name + "' is asked for twice");
            }
        }
        if (tail && byName.containsKey(RowStream.DELETED)) {
            throw new IllegalStateException(
                    "the table has a column named " + RowStream.DELETED + ", which a tail adds");
        }
        List<Field> fields = new ArrayList<>();
        names.forEach(name -> fields.add(byName.get(name)));
        if (tail) {
            fields.add(new Field(RowStream.DELETED, FieldType.notNullable(ArrowType.Bool.INSTANCE), null));
        }
        return new Schema(fields);
    }
}
