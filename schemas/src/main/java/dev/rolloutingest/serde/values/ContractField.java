package dev.rolloutingest.serde.values;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.ContractRow;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * The fields of the Rollout contract as the JSON and Protobuf decoders map them by name: each with the kind of value
 * it takes, whether a value must be there and what an absent one is. Their {@link #field} is the reader schema's own, so a row staged from
 * these decoders reads exactly as an Avro one.
 */
enum ContractField {
    RECORD_ID(Kind.STRING, true),
    EXPERIMENT(Kind.STRING, true),
    ROLLOUT_ID(Kind.STRING, true),
    PROBLEM_ID(Kind.NULLABLE_STRING, false),
    SEQUENCE_ORDER(Kind.INT, true),
    ROLE(Kind.STRING, true),
    CREATED_AT(Kind.TIMESTAMP, true),
    CONTENT(Kind.NULLABLE_STRING, false),
    INPUT_TOKENS(Kind.INT_ARRAY, false),
    OUTPUT_TOKENS(Kind.INT_ARRAY, false),
    OUTPUT_LOGPROBS(Kind.FLOAT_ARRAY, false),
    REWARD(Kind.NULLABLE_FLOAT, false),
    ADVANTAGE(Kind.NULLABLE_FLOAT, false),
    POLICY_VERSION(Kind.NULLABLE_LONG, false),
    INCLUDE_IN_TRAINING(Kind.BOOLEAN, false),
    METADATA(Kind.STRING_MAP, false),
    BINARY_PAYLOAD(Kind.NULLABLE_BYTES, false);

    /** What a field's value is, in the contract's Avro encoding. */
    enum Kind {
        STRING,
        NULLABLE_STRING,
        INT,
        TIMESTAMP,
        INT_ARRAY,
        FLOAT_ARRAY,
        NULLABLE_FLOAT,
        NULLABLE_LONG,
        BOOLEAN,
        STRING_MAP,
        NULLABLE_BYTES
    }

    static final ContractField[] ALL = values();
    private static final Map<String, ContractField> BY_NAME = new HashMap<>();

    static {
        List<Schema.Field> fields = Rollout.getClassSchema().getFields();
        if (fields.size() != ALL.length) {
            throw new ExceptionInInitializerError(
                    "Rollout has " + fields.size() + " fields, the mapping " + ALL.length);
        }
        for (ContractField f : ALL) {
            if (!fields.get(f.ordinal()).name().equals(f.fieldName)) {
                throw new ExceptionInInitializerError("Rollout field " + f.ordinal() + " is "
                        + fields.get(f.ordinal()).name() + ", not " + f.fieldName);
            }
            BY_NAME.put(f.fieldName, f);
        }
    }

    final Kind kind;
    final boolean required;
    final String fieldName;
    final Schema.Field field;

    ContractField(Kind kind, boolean required) {
        this.kind = kind;
        this.required = required;
        this.fieldName = name().toLowerCase(java.util.Locale.ROOT);
        this.field = Rollout.getClassSchema().getField(fieldName);
    }

    /**
     * Writes this field's value when the input has none: the contract's default, or missing-field for a required one.
     *
     * @param how how the value came to be absent, for the missing-field message ("null", "unset", ...)
     */
    void writeAbsent(String how, ContractRow row) {
        if (required) {
            throw ValueErrors.missing(fieldName, how);
        }
        int position = ordinal();
        if (nullable()) {
            row.nullValue(position);
            return;
        }
        switch (kind) {
            case INT_ARRAY -> row.ints(position, NO_INTS, 0);
            case FLOAT_ARRAY -> row.floats(position, NO_FLOATS, 0);
            case STRING_MAP -> {
                row.mapStart(position, 0);
                row.mapEnd();
            }
            case BOOLEAN -> row.booleanValue(position, true);
            default -> throw new IllegalStateException("no default for " + this);
        }
    }

    /** Whether the field's value is a union with null (written with its branch first). */
    boolean nullable() {
        return switch (kind) {
            case NULLABLE_STRING, NULLABLE_FLOAT, NULLABLE_LONG, NULLABLE_BYTES -> true;
            default -> false;
        };
    }

    private static final int[] NO_INTS = new int[0];
    private static final float[] NO_FLOATS = new float[0];

    /** The contract field of this name, or null for a field producers added. */
    static ContractField named(String name) {
        return BY_NAME.get(name);
    }

    /**
     * Added fields (beyond the contract) as reader fields: positions after the contract's, as the row path expects of
     * fields a producer added. The returned fields are new objects: callers cache them (the batch finds an added
     * field's column by the field object).
     */
    static List<Schema.Field> addedFields(List<String> names, List<Schema> types) {
        List<Schema.Field> fields = new ArrayList<>();
        Rollout.getClassSchema().getFields().forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        for (int i = 0; i < names.size(); i++) {
            fields.add(new Schema.Field(names.get(i), types.get(i)));
        }
        Schema record = Schema.createRecord("Rollout", null, "dev.rolloutingest.schemas", false, fields);
        return record.getFields().subList(ALL.length, fields.size());
    }
}
