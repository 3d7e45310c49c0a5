package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.core.Base64Variant;
import com.fasterxml.jackson.core.Base64Variants;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.DateTimeException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.Schema;

/**
 * A JSON object mapped to the contract by field name, written to an {@link AvroTape}: the contract's fields straight
 * from the parser's tokens (no tree, no Strings but the metadata's), the fields it adds through a tree (rare) after
 * them. The rules, the same for plain JSON and JSON Schema values:
 * <ul>
 *   <li>a required field (record_id, experiment, rollout_id, sequence_order, role, created_at) absent or null: {@code
 *       missing-field}; another field absent or null takes the contract's default (null, [], {}, include_in_training
 *       true);
 *   <li>strings are JSON strings; whole numbers go into int and long fields when they fit (3.0 is 3), any number
 *       into float fields (NaN and ±Infinity as Python's json writes them included);
 *   <li>created_at: an ISO-8601 date-time (an offset or Z; none means UTC) or a number of epoch milliseconds
 *       (fractions kept to the microsecond);
 *   <li>binary_payload: a base64 string (standard alphabet, padding optional) or an array of byte values 0..255;
 *   <li>metadata: an object whose values are strings, or numbers and booleans (kept as their JSON text);
 *   <li>anything else is {@code wrong-type} naming the field; a field twice is {@code duplicate-field}.
 * </ul>
 * A field beyond the contract is an added field ({@link AddedFields}): its type is the JSON Schema's declared one
 * when it has a simple one, else the value's own: string, boolean, a whole number as long, another number as double,
 * an array of one of those, an object as a record of its fields (sorted by name). A null or empty array leaves an
 * added field null in its row.
 */
final class JsonValues {
    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .build();
    private static final ObjectMapper TREES = new ObjectMapper(FACTORY);
    private static final Base64Variant BASE64 =
            Base64Variants.MIME_NO_LINEFEEDS.withReadPadding(Base64Variant.PaddingReadBehaviour.PADDING_ALLOWED);

    private final AddedFields addedFields;

    /** The parser settings values are read with (and the encoders write with). */
    static JsonFactory factory() {
        return FACTORY;
    }

    JsonValues(AddedFields addedFields) {
        this.addedFields = addedFields;
    }

    /**
     * Writes the row of the JSON object in {@code bytes[offset, offset + length)} to {@code tape}.
     *
     * @param declared the JSON Schema's types of fields beyond the contract (empty for plain JSON)
     * @param schemaId the value's schema id, {@link AddedFields#NO_SCHEMA_ID} for plain JSON
     */
    void read(byte[] bytes, int offset, int length, Map<String, Schema> declared, int schemaId, AvroTape tape) {
        tape.reset();
        int seen = 0;
        List<String> addedNames = null;
        List<JsonNode> addedValues = null;
        try (JsonParser in = FACTORY.createParser(bytes, offset, length)) {
            if (in.nextToken() != JsonToken.START_OBJECT) {
                throw ValueErrors.of(ValueErrors.NOT_JSON, "the value is JSON but not an object: " + in.currentToken());
            }
            for (JsonToken t = in.nextToken(); t == JsonToken.FIELD_NAME; t = in.nextToken()) {
                String name = in.currentName();
                ContractField field = ContractField.named(name);
                in.nextToken();
                if (field == null) {
                    if (addedNames == null) {
                        addedNames = new ArrayList<>();
                        addedValues = new ArrayList<>();
                    }
                    if (addedNames.contains(name)) {
                        throw ValueErrors.of(ValueErrors.DUPLICATE_FIELD, "field " + name + " comes twice");
                    }
                    addedNames.add(name);
                    addedValues.add(addedFields.keep() ? TREES.readTree(in) : null);
                    if (!addedFields.keep()) {
                        in.skipChildren();
                    }
                    continue;
                }
                int bit = 1 << field.ordinal();
                if ((seen & bit) != 0) {
                    throw ValueErrors.of(ValueErrors.DUPLICATE_FIELD, "field " + name + " comes twice");
                }
                seen |= bit;
                if (in.currentToken() == JsonToken.VALUE_NULL) {
                    field.writeAbsent("null", tape);
                    continue;
                }
                tape.field(field.field);
                value(in, field, tape);
            }
            if (in.currentToken() != JsonToken.END_OBJECT) {
                throw ValueErrors.of(ValueErrors.NOT_JSON, "the object is not closed");
            }
            if (in.nextToken() != null) {
                throw ValueErrors.of(ValueErrors.NOT_JSON, "the value has more after its object: " + in.currentToken());
            }
        } catch (JsonProcessingException e) {
            throw ValueErrors.of(ValueErrors.NOT_JSON, "the value is not JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw ValueErrors.of(ValueErrors.NOT_JSON, "the value is not JSON: " + e, e);
        }
        for (ContractField field : ContractField.ALL) {
            if ((seen & (1 << field.ordinal())) == 0) {
                field.writeAbsent("absent", tape);
            }
        }
        if (addedNames != null) {
            if (addedFields.keep()) {
                for (int i = 0; i < addedNames.size(); i++) {
                    added(addedNames.get(i), addedValues.get(i), declared.get(addedNames.get(i)), schemaId, tape);
                }
            } else {
                addedFields.dropped(schemaId, addedNames);
            }
        }
    }

    private static void value(JsonParser in, ContractField field, AvroTape tape) throws IOException {
        JsonToken t = in.currentToken();
        switch (field.kind) {
            case STRING -> string(in, field, tape);
            case NULLABLE_STRING -> {
                tape.writeIndex(1);
                string(in, field, tape);
            }
            case INT -> tape.writeInt(intValue(in, field.fieldName));
            case TIMESTAMP -> tape.writeLong(timestamp(in, field.fieldName));
            case INT_ARRAY -> intArray(in, field.fieldName, tape);
            case FLOAT_ARRAY -> floatArray(in, field.fieldName, tape);
            case NULLABLE_FLOAT -> {
                tape.writeIndex(1);
                tape.writeFloat(floatValue(in, field.fieldName));
            }
            case NULLABLE_LONG -> {
                tape.writeIndex(1);
                tape.writeLong(longValue(in, field.fieldName));
            }
            case BOOLEAN -> {
                if (!t.isBoolean()) {
                    throw ValueErrors.wrongType(field.fieldName, "true or false", describe(in));
                }
                tape.writeBoolean(t == JsonToken.VALUE_TRUE);
            }
            case STRING_MAP -> stringMap(in, field.fieldName, tape);
            case NULLABLE_BYTES -> {
                tape.writeIndex(1);
                bytes(in, field.fieldName, tape);
            }
        }
    }

    private static void string(JsonParser in, ContractField field, AvroTape tape) throws IOException {
        if (in.currentToken() != JsonToken.VALUE_STRING) {
            throw ValueErrors.wrongType(field.fieldName, "a string", describe(in));
        }
        tape.writeString(in.getTextCharacters(), in.getTextOffset(), in.getTextLength());
    }

    private static int intValue(JsonParser in, String name) throws IOException {
        long value = longValue(in, name);
        if (!WholeNumbers.fitsInt(value)) {
            throw ValueErrors.wrongType(name, WholeNumbers.WITHIN_32_BITS, in.getText());
        }
        return (int) value;
    }

    private static long longValue(JsonParser in, String name) throws IOException {
        JsonToken t = in.currentToken();
        if (t == JsonToken.VALUE_NUMBER_INT) {
            JsonParser.NumberType type = in.getNumberType();
            if (type == JsonParser.NumberType.INT || type == JsonParser.NumberType.LONG) {
                return in.getLongValue();
            }
            throw ValueErrors.wrongType(name, WholeNumbers.WITHIN_64_BITS, in.getText());
        }
        if (t == JsonToken.VALUE_NUMBER_FLOAT) {
            double d = in.getDoubleValue();
            if (WholeNumbers.isWhole(d)) {
                return (long) d;
            }
            throw ValueErrors.wrongType(name, "a whole number", in.getText());
        }
        throw ValueErrors.wrongType(name, "a whole number", describe(in));
    }

    private static float floatValue(JsonParser in, String name) throws IOException {
        JsonToken t = in.currentToken();
        if (t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_NUMBER_INT) {
            return in.getFloatValue();
        }
        throw ValueErrors.wrongType(name, "a number", describe(in));
    }

    /** Microseconds since the epoch from an ISO-8601 string or a number of epoch milliseconds. */
    private static long timestamp(JsonParser in, String name) throws IOException {
        JsonToken t = in.currentToken();
        try {
            if (t == JsonToken.VALUE_NUMBER_INT && in.getNumberType() != JsonParser.NumberType.BIG_INTEGER) {
                return CreatedAt.ofMillis(in.getLongValue());
            }
            if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
                if (t == JsonToken.VALUE_NUMBER_FLOAT && !Double.isFinite(in.getDoubleValue())) {
                    throw ValueErrors.wrongType(name, "epoch milliseconds or an ISO-8601 date-time", in.getText());
                }
                return CreatedAt.ofMillis(in.getDecimalValue());
            }
            if (t == JsonToken.VALUE_STRING) {
                return CreatedAt.ofIso(in.getText());
            }
        } catch (ArithmeticException | DateTimeException e) {
            throw ValueErrors.wrongType(
                    name, "epoch milliseconds or an ISO-8601 date-time (" + e.getMessage() + ")", in.getText());
        }
        throw ValueErrors.wrongType(name, "epoch milliseconds or an ISO-8601 date-time", describe(in));
    }

    private static void intArray(JsonParser in, String name, AvroTape tape) throws IOException {
        if (in.currentToken() != JsonToken.START_ARRAY) {
            throw ValueErrors.wrongType(name, "an array of whole numbers", describe(in));
        }
        int n = 0;
        int[] items = tape.ints;
        while (in.nextToken() != JsonToken.END_ARRAY) {
            if (n == items.length) {
                items = tape.ints(n + 1);
            }
            items[n++] = intValue(in, name + "[" + n + "]");
        }
        tape.writeIntArray(items, n);
    }

    private static void floatArray(JsonParser in, String name, AvroTape tape) throws IOException {
        if (in.currentToken() != JsonToken.START_ARRAY) {
            throw ValueErrors.wrongType(name, "an array of numbers", describe(in));
        }
        int n = 0;
        float[] items = tape.floats;
        while (in.nextToken() != JsonToken.END_ARRAY) {
            if (n == items.length) {
                items = tape.floats(n + 1);
            }
            items[n++] = floatValue(in, name + "[" + n + "]");
        }
        tape.writeFloatArray(items, n);
    }

    private static void stringMap(JsonParser in, String name, AvroTape tape) throws IOException {
        if (in.currentToken() != JsonToken.START_OBJECT) {
            throw ValueErrors.wrongType(name, "an object of strings", describe(in));
        }
        List<String> entries = new ArrayList<>();
        for (JsonToken t = in.nextToken(); t == JsonToken.FIELD_NAME; t = in.nextToken()) {
            String key = in.currentName();
            JsonToken v = in.nextToken();
            if (v != JsonToken.VALUE_STRING && !v.isNumeric() && !v.isBoolean()) {
                throw ValueErrors.wrongType(name + "." + key, "a string, number or boolean", describe(in));
            }
            entries.add(key);
            entries.add(in.getText());
        }
        if (!entries.isEmpty()) {
            tape.writeLong(entries.size() / 2);
            for (String s : entries) {
                tape.writeString(s);
            }
        }
        tape.writeLong(0);
    }

    private static void bytes(JsonParser in, String name, AvroTape tape) throws IOException {
        JsonToken t = in.currentToken();
        if (t == JsonToken.VALUE_STRING) {
            byte[] decoded;
            try {
                decoded = in.getBinaryValue(BASE64);
            } catch (JsonProcessingException | IllegalArgumentException e) {
                throw ValueErrors.wrongType(name, "base64 or an array of bytes", "a string that is not base64");
            }
            tape.writeBytes(decoded, 0, decoded.length);
            return;
        }
        if (t != JsonToken.START_ARRAY) {
            throw ValueErrors.wrongType(name, "base64 or an array of bytes", describe(in));
        }
        int n = 0;
        int[] items = tape.ints;
        while (in.nextToken() != JsonToken.END_ARRAY) {
            long b = longValue(in, name + "[" + n + "]");
            if (b < 0 || b > 255) {
                throw ValueErrors.wrongType(name + "[" + n + "]", "a byte value 0..255", Long.toString(b));
            }
            if (n == items.length) {
                items = tape.ints(n + 1);
            }
            items[n++] = (int) b;
        }
        byte[] decoded = new byte[n];
        for (int i = 0; i < n; i++) {
            decoded[i] = (byte) items[i];
        }
        tape.writeBytes(decoded, 0, n);
    }

    private static String describe(JsonParser in) throws IOException {
        JsonToken t = in.currentToken();
        return switch (t) {
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "the number " + in.getText();
            case VALUE_TRUE, VALUE_FALSE -> in.getText();
            case START_ARRAY -> "an array";
            case START_OBJECT -> "an object";
            case VALUE_NULL -> "null";
            default -> String.valueOf(t);
        };
    }

    // ---- added fields: a tree, its type declared or inferred, encoded by that type ----

    private void added(String name, JsonNode value, Schema declared, int schemaId, AvroTape tape) {
        if (value == null || value.isNull() || value.isArray() && value.isEmpty()) {
            return; // no type to give a column: the row's value of the field is null
        }
        Schema type = declared != null ? declared : infer(name, value);
        tape.field(addedFields.field(schemaId, name, type));
        encode(value, type, name, tape);
    }

    /** The Avro type of a JSON value that has no declared one. */
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

    /** Writes a tree in the Avro encoding of {@code type}; wrong-type naming the path when it does not fit. */
    static void encode(JsonNode value, Schema type, String path, AvroTape tape) {
        switch (type.getType()) {
            case UNION -> {
                List<Schema> branches = type.getTypes();
                for (int i = 0; i < branches.size(); i++) {
                    boolean isNull = branches.get(i).getType() == Schema.Type.NULL;
                    if (isNull == (value == null || value.isNull())) {
                        tape.writeIndex(i);
                        if (!isNull) {
                            encode(value, branches.get(i), path, tape);
                        }
                        return;
                    }
                }
                throw ValueErrors.wrongType(path, type.toString(), String.valueOf(value));
            }
            case STRING -> {
                require(value != null && value.isTextual(), path, "a string", value);
                tape.writeString(value.textValue());
            }
            case BOOLEAN -> {
                require(value != null && value.isBoolean(), path, "true or false", value);
                tape.writeBoolean(value.booleanValue());
            }
            case INT, LONG -> {
                require(value != null && value.isNumber(), path, "a whole number", value);
                boolean fits = value.isIntegralNumber()
                        ? (type.getType() == Schema.Type.INT ? value.canConvertToInt() : value.canConvertToLong())
                        : WholeNumbers.isWhole(value.doubleValue());
                require(fits, path, "a whole number of " + type.getType(), value);
                tape.writeLong(value.isIntegralNumber() ? value.longValue() : (long) value.doubleValue());
            }
            case FLOAT -> {
                require(value != null && value.isNumber(), path, "a number", value);
                tape.writeFloat(value.floatValue());
            }
            case DOUBLE -> {
                require(value != null && value.isNumber(), path, "a number", value);
                tape.writeDouble(value.doubleValue());
            }
            case BYTES -> {
                require(value != null && value.isTextual(), path, "base64", value);
                byte[] decoded;
                try {
                    decoded = Base64.getDecoder().decode(value.textValue());
                } catch (IllegalArgumentException e) {
                    throw ValueErrors.wrongType(path, "base64", "a string that is not base64");
                }
                tape.writeBytes(decoded, 0, decoded.length);
            }
            case ARRAY -> {
                require(value != null && value.isArray(), path, "an array", value);
                if (!value.isEmpty()) {
                    tape.writeLong(value.size());
                    for (int i = 0; i < value.size(); i++) {
                        encode(value.get(i), type.getElementType(), path + "[" + i + "]", tape);
                    }
                }
                tape.writeLong(0);
            }
            case MAP -> {
                require(value != null && value.isObject(), path, "an object", value);
                if (!value.isEmpty()) {
                    tape.writeLong(value.size());
                    for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
                        Map.Entry<String, JsonNode> e = it.next();
                        tape.writeString(e.getKey());
                        encode(e.getValue(), type.getValueType(), path + "." + e.getKey(), tape);
                    }
                }
                tape.writeLong(0);
            }
            case RECORD -> {
                require(value != null && value.isObject(), path, "an object", value);
                for (Iterator<String> it = value.fieldNames(); it.hasNext(); ) {
                    String name = it.next();
                    if (type.getField(name) == null) {
                        throw ValueErrors.wrongType(
                                path, "an object of the fields " + fieldNames(type), "one with the field " + name);
                    }
                }
                for (Schema.Field field : type.getFields()) {
                    encode(value.get(field.name()), field.schema(), path + "." + field.name(), tape);
                }
            }
            default -> throw ValueErrors.wrongType(path, type.toString(), String.valueOf(value));
        }
    }

    private static List<String> fieldNames(Schema record) {
        return record.getFields().stream().map(Schema.Field::name).toList();
    }

    private static void require(boolean ok, String path, String wanted, JsonNode value) {
        if (!ok) {
            throw ValueErrors.wrongType(
                    path,
                    wanted,
                    value == null ? "nothing" : value.getNodeType().toString().toLowerCase() + " " + value);
        }
    }
}
