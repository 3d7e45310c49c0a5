package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.Schema;

/**
 * The Avro type of an added field's JSON value when its JSON Schema declares none ({@link JsonSchemas}) or the value
 * is plain JSON: string, boolean, a whole number as long, another number as double, an array of one of those (whole
 * and other numbers together as double), an object as a record of its fields sorted by name. A column needs one
 * type: an array of mixed types or none, a null inside an array or object and an empty object are {@code
 * wrong-type}, nesting deeper than {@link AddedFields#MAX_NESTING} is {@code schema-refused}.
 */
final class JsonAddedTypes {
    private JsonAddedTypes() {}

    /** The Avro type of a JSON value that has no declared one; {@code path} names it in errors. */
    static Schema infer(String path, JsonNode value) {
        return infer(path, value, 0);
    }

    private static Schema infer(String path, JsonNode value, int depth) {
        if ((value.isArray() || value.isObject()) && depth >= AddedFields.MAX_NESTING) {
            throw ValueErrors.of(
                    "schema-refused",
                    "field " + path + " nests arrays and objects deeper than " + AddedFields.MAX_NESTING
                            + " (a column cannot)");
        }
        if (value.isTextual()) {
            return Schema.create(Schema.Type.STRING);
        }
        if (value.isBoolean()) {
            return Schema.create(Schema.Type.BOOLEAN);
        }
        if (value.isIntegralNumber()) {
            if (!value.canConvertToLong()) {
                throw ValueErrors.wrongType(path, "a number within 64 bits", value.toString());
            }
            return Schema.create(Schema.Type.LONG);
        }
        if (value.isNumber()) {
            return Schema.create(Schema.Type.DOUBLE);
        }
        if (value.isArray()) {
            Schema item = null;
            for (int i = 0; i < value.size(); i++) {
                JsonNode element = value.get(i);
                if (element.isNull()) {
                    throw ValueErrors.wrongType(
                            path + "[" + i + "]", "a value (an added array holds no nulls)", "null");
                }
                Schema type = infer(path + "[" + i + "]", element, depth + 1);
                if (item == null || item.equals(type)) {
                    item = type;
                } else if (isNumber(item) && isNumber(type)) {
                    item = Schema.create(Schema.Type.DOUBLE);
                } else {
                    throw ValueErrors.wrongType(path, "an array of one type", "items of " + item + " and " + type);
                }
            }
            if (item == null) {
                throw ValueErrors.wrongType(path, "an array with a type (a nested array is not empty)", "[]");
            }
            return Schema.createArray(item);
        }
        if (value.isObject()) {
            Map<String, JsonNode> sorted = new TreeMap<>();
            value.fields().forEachRemaining(e -> sorted.put(e.getKey(), e.getValue()));
            List<Schema.Field> fields = new ArrayList<>();
            for (Map.Entry<String, JsonNode> e : sorted.entrySet()) {
                String child = path + "." + e.getKey();
                if (e.getValue().isNull()) {
                    throw ValueErrors.wrongType(child, "a value (a nested field needs a type)", "null");
                }
                try {
                    fields.add(new Schema.Field(e.getKey(), infer(child, e.getValue(), depth + 1)));
                } catch (org.apache.avro.SchemaParseException bad) {
                    throw ValueErrors.of(
                            "schema-refused", "field " + child + " cannot be a column: " + bad.getMessage());
                }
            }
            if (fields.isEmpty()) {
                throw ValueErrors.wrongType(path, "an object with fields", "{}");
            }
            return Schema.createRecord(recordName(path), null, null, false, fields);
        }
        throw ValueErrors.wrongType(path, "a JSON value", value.getNodeType().toString());
    }

    private static String recordName(String path) {
        StringBuilder name = new StringBuilder("added_");
        for (char c : path.toCharArray()) {
            name.append(Character.isLetterOrDigit(c) && c < 0x80 ? c : '_');
        }
        return name.toString();
    }

    private static boolean isNumber(Schema s) {
        return s.getType() == Schema.Type.LONG || s.getType() == Schema.Type.DOUBLE;
    }
}
