package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.core.Base64Variant;
import com.fasterxml.jackson.core.Base64Variants;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.time.DateTimeException;
import java.util.ArrayList;
import java.util.List;

/**
 * One contract field's value read off the parser's tokens by the field's kind and written to the tape, no tree in
 * between ({@link JsonValues} maps the object's fields onto the contract). What each kind takes:
 * <ul>
 *   <li>strings are JSON strings; whole numbers go into int and long fields when they fit (3.0 is 3), any number
 *       into float fields (NaN and ±Infinity as Python's json writes them included);
 *   <li>created_at: an ISO-8601 date-time (an offset or Z; none means UTC) or a number of epoch milliseconds
 *       (fractions kept to the microsecond);
 *   <li>binary_payload: a base64 string (standard alphabet, padding optional) or an array of byte values 0..255;
 *   <li>metadata: an object whose values are strings, or numbers and booleans (kept as their JSON text);
 *   <li>anything else is {@code wrong-type} naming the field.
 * </ul>
 */
final class JsonFields {
    private static final Base64Variant BASE64 =
            Base64Variants.MIME_NO_LINEFEEDS.withReadPadding(Base64Variant.PaddingReadBehaviour.PADDING_ALLOWED);

    private JsonFields() {}

    /** Writes the value of {@code field} the parser is at (not null: that is the field's absence). */
    static void read(JsonParser in, Input json, ContractField field, AvroTape tape) throws IOException {
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
                bytes(in, json, field.fieldName, tape);
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

    /** The UTF-8 JSON a parser reads: {@code bytes[offset, end)}. */
    record Input(byte[] bytes, int offset, int end) {}

    private static void bytes(JsonParser in, Input json, String name, AvroTape tape) throws IOException {
        JsonToken t = in.currentToken();
        if (t == JsonToken.VALUE_STRING) {
            long quote = in.currentTokenLocation().getByteOffset(); // from the start of the value's JSON
            if (quote >= 0 && tape.writeBase64(json.bytes(), json.offset() + (int) quote + 1, json.end()) >= 0) {
                return; // decoded from the value's bytes, the string left for the parser to skip unread
            }
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
}
