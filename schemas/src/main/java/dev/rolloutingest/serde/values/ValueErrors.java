package dev.rolloutingest.serde.values;

import dev.rolloutingest.serde.ProtoSchemas;
import dev.rolloutingest.serde.SerdeException;

/**
 * The record's faults a value in another format than Avro can have, each with the stable reason the dead-letter
 * topic's headers and the metrics carry. Every message names the field and what came.
 */
final class ValueErrors {
    /** Plain JSON that does not parse, or is not an object. */
    static final String NOT_JSON = "not-json";
    /** A Protobuf body that does not parse with its schema. */
    static final String NOT_PROTOBUF = ProtoSchemas.NOT_PROTOBUF;
    /** The value is in another format than its topic's setting says. */
    static final String WRONG_FORMAT = "wrong-format";
    /** A required field of the contract is absent or null. */
    static final String MISSING_FIELD = "missing-field";
    /** A field's value has a type the contract's field cannot take without loss. */
    static final String WRONG_TYPE = "wrong-type";
    /** A field comes twice in one JSON object. */
    static final String DUPLICATE_FIELD = "duplicate-field";
    /** The registry's schema of the value cannot be read (a Protobuf schema's import, a JSON Schema that is no JSON). */
    static final String SCHEMA_UNREADABLE = ProtoSchemas.SCHEMA_UNREADABLE;

    private ValueErrors() {}

    static SerdeException of(String reason, String message) {
        return new SerdeException(reason, message, null);
    }

    static SerdeException of(String reason, String message, Throwable cause) {
        return new SerdeException(reason, message, cause);
    }

    static SerdeException missing(String field, String what) {
        return of(MISSING_FIELD, "field " + field + " is required, " + what);
    }

    static SerdeException wrongType(String field, String wanted, String got) {
        return of(WRONG_TYPE, "field " + field + " must be " + wanted + ", got " + got);
    }
}
