package dev.rolloutingest.table.rows;

import dev.rolloutingest.schemas.Rollout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The table's Arrow schema: the Rollout Avro fields in their order, then provenance columns.
 *
 * <p>This exact schema object is used for the base table and for every generation. lance-core 7.0.0
 * aborts the JVM on a point lookup when a generation's schema differs from the base (missing PK field
 * metadata, any schema-level metadata), so the schema carries no schema-level metadata and provenance
 * lives in columns and sidecar files, never in metadata.
 */
public final class RolloutSchema {
    public static final String PRIMARY_KEY_METADATA = "lance-schema:unenforced-primary-key";

    public static final String RECORD_ID = "record_id";
    public static final String EXPERIMENT = "experiment";
    public static final String ROLLOUT_ID = "rollout_id";
    public static final String PROBLEM_ID = "problem_id";
    public static final String SEQUENCE_ORDER = "sequence_order";
    public static final String ROLE = "role";
    public static final String CREATED_AT = "created_at";
    public static final String CONTENT = "content";
    public static final String INPUT_TOKENS = "input_tokens";
    public static final String OUTPUT_TOKENS = "output_tokens";
    public static final String OUTPUT_LOGPROBS = "output_logprobs";
    public static final String REWARD = "reward";
    public static final String ADVANTAGE = "advantage";
    public static final String POLICY_VERSION = "policy_version";
    public static final String INCLUDE_IN_TRAINING = "include_in_training";
    public static final String METADATA = "metadata";
    public static final String BINARY_PAYLOAD = "binary_payload";
    public static final String SOURCE_PARTITION = "source_partition";
    public static final String SOURCE_OFFSET = "source_offset";
    public static final String INGESTED_AT = "ingested_at";

    private static final ArrowType UTF8 = ArrowType.Utf8.INSTANCE;
    private static final ArrowType TIMESTAMP_MICROS = new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC");

    public static final Schema SCHEMA = build();

    private RolloutSchema() {}

    /** Every column but the payload: what list reads project unless the payload is asked for. */
    public static List<String> columnsWithoutPayload() {
        return SCHEMA.getFields().stream()
                .map(Field::getName)
                .filter(n -> !n.equals(BINARY_PAYLOAD))
                .toList();
    }

    public static List<String> allColumns() {
        return SCHEMA.getFields().stream().map(Field::getName).toList();
    }

    private static Schema build() {
        List<Field> fields = new ArrayList<>();
        fields.add(new Field(RECORD_ID, new FieldType(false, UTF8, null, Map.of(PRIMARY_KEY_METADATA, "true")), null));
        fields.add(required(EXPERIMENT, UTF8));
        fields.add(required(ROLLOUT_ID, UTF8));
        fields.add(optional(PROBLEM_ID, UTF8));
        fields.add(required(SEQUENCE_ORDER, new ArrowType.Int(32, true)));
        fields.add(required(ROLE, UTF8));
        fields.add(required(CREATED_AT, TIMESTAMP_MICROS));
        fields.add(optional(CONTENT, UTF8));
        fields.add(list(INPUT_TOKENS, new ArrowType.Int(32, true)));
        fields.add(list(OUTPUT_TOKENS, new ArrowType.Int(32, true)));
        fields.add(list(OUTPUT_LOGPROBS, new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
        fields.add(optional(REWARD, new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
        fields.add(optional(ADVANTAGE, new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)));
        fields.add(optional(POLICY_VERSION, new ArrowType.Int(64, true)));
        fields.add(required(INCLUDE_IN_TRAINING, ArrowType.Bool.INSTANCE));
        // Avro map<string> as list<struct<key, value>>: every Lance version reads it.
        Field entry = new Field(
                "entry",
                FieldType.notNullable(ArrowType.Struct.INSTANCE),
                List.of(required("key", UTF8), optional("value", UTF8)));
        fields.add(new Field(METADATA, FieldType.notNullable(ArrowType.List.INSTANCE), List.of(entry)));
        fields.add(optional(BINARY_PAYLOAD, ArrowType.LargeBinary.INSTANCE));
        fields.add(required(SOURCE_PARTITION, new ArrowType.Int(32, true)));
        fields.add(required(SOURCE_OFFSET, new ArrowType.Int(64, true)));
        fields.add(required(INGESTED_AT, TIMESTAMP_MICROS));
        checkCoversAvro(fields);
        return new Schema(fields);
    }

    /** Fails the class initialisation when the Avro contract gained a field the table lacks. */
    private static void checkCoversAvro(List<Field> fields) {
        List<String> names = fields.stream().map(Field::getName).toList();
        for (org.apache.avro.Schema.Field avro : Rollout.getClassSchema().getFields()) {
            if (!names.contains(avro.name())) {
                throw new IllegalStateException("Rollout field " + avro.name() + " has no column in the table schema");
            }
        }
    }

    private static Field required(String name, ArrowType type) {
        return new Field(name, FieldType.notNullable(type), null);
    }

    private static Field optional(String name, ArrowType type) {
        return new Field(name, FieldType.nullable(type), null);
    }

    private static Field list(String name, ArrowType item) {
        return new Field(
                name,
                FieldType.notNullable(ArrowType.List.INSTANCE),
                List.of(new Field("item", FieldType.notNullable(item), null)));
    }

    /**
     * Human-readable differences between an existing table's schema and this one (the contract's columns), empty
     * when it holds them as they are; columns producers added after them are not differences.
     */
    public static List<String> differences(Schema actual) {
        List<String> diffs = new ArrayList<>();
        for (Field expected : SCHEMA.getFields()) {
            Field found = actual.getFields().stream()
                    .filter(f -> f.getName().equals(expected.getName()))
                    .findFirst()
                    .orElse(null);
            if (found == null) {
                diffs.add("missing column " + expected.getName() + " (" + expected.getType() + ")");
            } else if (!found.getType().equals(expected.getType())
                    || found.isNullable() != expected.isNullable()
                    || !found.getChildren().equals(expected.getChildren())) {
                diffs.add(
                        "column " + expected.getName() + " is " + describe(found) + ", expected " + describe(expected));
            } else if (expected.getName().equals(RECORD_ID)
                    && !"true".equals(found.getMetadata().get(PRIMARY_KEY_METADATA))) {
                diffs.add("column record_id lacks field metadata " + PRIMARY_KEY_METADATA + "=true");
            }
        }
        // Any other column is one producers added (AddedColumns): nullable, as they are all added.
        for (Field found : actual.getFields()) {
            if (!SCHEMA.getFields().stream().anyMatch(f -> f.getName().equals(found.getName()))
                    && !found.isNullable()) {
                diffs.add("unexpected column " + found.getName() + " (" + found.getType() + " not null): the columns"
                        + " producers add are nullable");
            }
        }
        return diffs;
    }

    private static String describe(Field field) {
        return field.getType()
                + (field.isNullable() ? " nullable" : " not null")
                + (field.getChildren().isEmpty() ? "" : " " + field.getChildren());
    }
}
