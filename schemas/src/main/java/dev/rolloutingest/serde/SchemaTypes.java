package dev.rolloutingest.serde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Set;

/**
 * The type a registered schema's text shows, for a registry answer without {@code schemaType}: Confluent's registry
 * leaves it out only for Avro, but Apicurio leaves it out for every schema registered under a subject that held Avro
 * first. Avro is JSON (a type name, a union array, or an object whose {@code type} is Avro's); a JSON Schema is a JSON
 * object (or {@code true}/{@code false}) with JSON Schema's keywords; anything else is Protobuf ({@code .proto} text
 * or a base64 FileDescriptorProto, which never parse as JSON).
 */
final class SchemaTypes {
    static final String AVRO = "AVRO";
    static final String JSON = "JSON";
    static final String PROTOBUF = "PROTOBUF";

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** Type names only Avro has; JSON Schema's "string", "boolean", "null" and "array" are in both. */
    private static final Set<String> AVRO_TYPES =
            Set.of("record", "error", "enum", "fixed", "map", "int", "long", "float", "double", "bytes");

    private static final Set<String> AVRO_KEYWORDS =
            Set.of("name", "namespace", "fields", "symbols", "size", "values", "logicalType", "aliases", "doc");

    private static final Set<String> JSON_SCHEMA_TYPES = Set.of("object", "integer", "number");

    private static final Set<String> JSON_SCHEMA_KEYWORDS = Set.of(
            "$schema",
            "$id",
            "$ref",
            "$defs",
            "definitions",
            "properties",
            "patternProperties",
            "additionalProperties",
            "required",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
            "const",
            "enum",
            "title",
            "description",
            "format",
            "pattern",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "uniqueItems",
            "prefixItems",
            "contains",
            "propertyNames");

    private SchemaTypes() {}

    /**
     * AVRO, JSON or PROTOBUF. Text that starts like JSON but does not parse is AVRO (the registry's own default), so
     * the Avro parser's error names what is wrong with it.
     */
    static String of(String text) {
        String trimmed = text == null ? "" : text.strip();
        if (trimmed.equals("true") || trimmed.equals("false")) {
            return JSON;
        }
        if (trimmed.isEmpty() || "{[\"".indexOf(trimmed.charAt(0)) < 0) {
            return PROTOBUF;
        }
        JsonNode schema;
        try {
            schema = MAPPER.readTree(trimmed);
        } catch (IOException | RuntimeException e) {
            return AVRO;
        }
        if (schema == null || !schema.isObject()) {
            return AVRO; // a type name or a union
        }
        JsonNode type = schema.get("type");
        if (type != null && type.isTextual() && AVRO_TYPES.contains(type.asText())) {
            return AVRO;
        }
        if (type == null || !type.isTextual() || JSON_SCHEMA_TYPES.contains(type.asText())) {
            return JSON; // no type, a list of types, or one only JSON Schema has
        }
        for (String keyword : JSON_SCHEMA_KEYWORDS) {
            if (schema.has(keyword)) {
                return JSON;
            }
        }
        for (String keyword : AVRO_KEYWORDS) {
            if (schema.has(keyword)) {
                return AVRO;
            }
        }
        JsonNode items = schema.get("items");
        // {"type": "array", "items": "string"} is Avro's; {"type": "string"} and the like are what Confluent's JSON
        // Schema serializer registers (Avro's serializer registers a primitive as its name, "string")
        return items != null && items.isTextual() ? AVRO : JSON;
    }
}
