package dev.rolloutingest.serde.values;

import dev.rolloutingest.serde.ConfluentAvroDeserializer.UnknownFieldsListener;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaParseException;

/**
 * Fields a JSON or Protobuf value has beyond the contract, handled as schema evolution handles an Avro writer's
 * added fields: kept (they become columns: each gets a reader field after the contract's, the same object for the
 * same name and type, so the batch finds its column once) or dropped and told (counted, logged once).
 */
final class AddedFields {
    /** How deep an added field's records and arrays nest at most: deeper (a recursive message) is refused. */
    static final int MAX_NESTING = 32;

    /** The schema id of a value that has none (plain JSON), as the listeners are told. */
    static final int NO_SCHEMA_ID = -1;

    private final boolean keep;
    private final UnknownFieldsListener added;
    private final UnknownFieldsListener dropped;
    private final Map<String, Schema.Field> fields;

    /**
     * @param capacity how many (name, type) pairs keep their reader field; past it the oldest is made again when it
     *     comes back (plain JSON infers a type per value, so the pairs are the producers' to choose)
     */
    AddedFields(boolean keep, UnknownFieldsListener added, UnknownFieldsListener dropped, int capacity) {
        this.keep = keep;
        this.added = added;
        this.dropped = dropped;
        this.fields = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Schema.Field> eldest) {
                return size() > capacity;
            }
        });
    }

    boolean keep() {
        return keep;
    }

    /** The reader field of an added field of this name and type; told to the listener when new. */
    Schema.Field field(int schemaId, String name, Schema type) {
        String key = name + '\u0000' + type;
        Schema.Field field = fields.get(key);
        if (field == null) {
            try {
                field = ContractField.addedFields(List.of(name), List.of(type)).get(0);
            } catch (SchemaParseException e) {
                throw ValueErrors.of("schema-refused", "field '" + name + "' cannot be a column: " + e.getMessage(), e);
            }
            fields.put(key, field);
            added.dropped(schemaId, List.of(name));
        }
        return field;
    }

    void dropped(int schemaId, List<String> names) {
        dropped.dropped(schemaId, names);
    }
}
