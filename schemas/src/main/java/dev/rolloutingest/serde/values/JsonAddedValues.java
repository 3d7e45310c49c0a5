package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * An added field's JSON value (a tree) written in the Avro encoding of its type, declared or inferred
 * ({@link JsonAddedTypes}); a value that does not fit the type is {@code wrong-type} naming its path.
 */
final class JsonAddedValues {
    private JsonAddedValues() {}

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
