package dev.rolloutingest.serde.values;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** How a topic's values are read: one format, or {@link #AUTO} to tell them apart per record. */
public enum ValueFormat {
    /** Avro in the Confluent wire format (magic byte 0, schema id): the contract's own encoding. */
    AVRO("avro"),
    /** A UTF-8 JSON object, no registry. */
    JSON("json"),
    /** A JSON object in the Confluent wire format, its schema a JSON Schema in the registry. */
    JSON_SCHEMA("json-schema"),
    /** A Protobuf message in the Confluent wire format (schema id, message indexes), its schema in the registry. */
    PROTOBUF("protobuf"),
    /**
     * Each record by itself: framed values by their schema's type in the registry (AVRO, JSON, PROTOBUF), unframed
     * ones as plain JSON when they start with '{' (after whitespace).
     */
    AUTO("auto");

    private final String setting;

    ValueFormat(String setting) {
        this.setting = setting;
    }

    /** Its name in the settings. */
    public String setting() {
        return setting;
    }

    /** The format of a setting's value; IllegalArgumentException listing the valid ones. */
    public static ValueFormat of(String setting) {
        String wanted = setting == null ? "" : setting.trim().toLowerCase(Locale.ROOT);
        for (ValueFormat format : values()) {
            if (format.setting.equals(wanted)) {
                return format;
            }
        }
        throw new IllegalArgumentException("'" + setting + "' is not one of " + names());
    }

    public static String names() {
        return Arrays.stream(values()).map(ValueFormat::setting).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return setting;
    }
}
