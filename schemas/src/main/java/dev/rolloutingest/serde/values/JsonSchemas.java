package dev.rolloutingest.serde.values;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * What a registered JSON Schema tells about a value's fields beyond the contract: the Avro type of each property
 * whose JSON type is simple ({@code integer} long, {@code number} double, {@code string}, {@code boolean}, an
 * {@code array} of those, a type list of one of those and {@code null}). The contract's fields keep the contract's
 * mapping whatever the schema says; a property it leaves open (an object, {@code oneOf}, {@code $ref}) gets the
 * type of its values as plain JSON does.
 */
final class JsonSchemas {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JsonSchemas() {}

    static Map<String, Schema> addedTypes(int schemaId, String text) {
        JsonNode schema;
        try {
            schema = JSON.readTree(text);
        } catch (IOException e) {
            throw ValueErrors.of(
                    ValueErrors.SCHEMA_UNREADABLE, "JSON Schema id " + schemaId + " is not JSON: " + e.getMessage(), e);
        }
        Map<String, Schema> types = new HashMap<>();
        if (schema == null) {
            return types;
        }
        schema.path("properties").fields().forEachRemaining(p -> {
            if (ContractField.named(p.getKey()) == null) {
                Schema type = simple(p.getValue(), 0);
                if (type != null) {
                    types.put(p.getKey(), type);
                }
            }
        });
        return types;
    }

    private static Schema simple(JsonNode property, int depth) {
        if (depth >= AddedFields.MAX_NESTING) {
            return null; // deeper than a column nests: the values say (and are refused)
        }
        JsonNode type = property.path("type");
        String name = null;
        if (type.isTextual()) {
            name = type.asText();
        } else if (type.isArray()) {
            for (JsonNode t : type) {
                if (!"null".equals(t.asText())) {
                    if (name != null) {
                        return null; // several types: the values say which
                    }
                    name = t.asText();
                }
            }
        }
        if (name == null) {
            return null;
        }
        return switch (name) {
            case "integer" -> Schema.create(Schema.Type.LONG);
            case "number" -> Schema.create(Schema.Type.DOUBLE);
            case "string" -> Schema.create(Schema.Type.STRING);
            case "boolean" -> Schema.create(Schema.Type.BOOLEAN);
            case "array" -> {
                Schema item = simple(property.path("items"), depth + 1);
                yield item == null ? null : Schema.createArray(item);
            }
            default -> null;
        };
    }
}
