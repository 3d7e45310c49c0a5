package dev.rolloutingest.table.rows;

import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.storage.LanceIo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Columns producers added beyond the {@code Rollout} contract (a newer schema with more fields): which Arrow
 * column a field becomes, which later field may still write into it, and adding them to the base.
 *
 * <p>The order that keeps every reader and merge safe: a column is added to the base (nullable, so every row
 * before it reads null) before any generation holding it is written. A generation may lack columns the base has
 * (written before, or by an older producer): reads and merges fill them with nulls. The base never lacks a
 * column a generation has, so nothing is ever dropped on the way to the base.
 *
 * <p>The type rule: a column keeps the type it was added with. A later field writes into it when Avro would read
 * the one as the other: the same type, or int into long, float or double, long into float or double, float into
 * double, string into bytes and bytes into string (top-level columns; nested types must match). Anything else is
 * refused with its record (the dead-letter topic), never the partition.
 */
public final class AddedColumns {
    private static final Logger log = LoggerFactory.getLogger(AddedColumns.class);

    /** Field metadata of a column that holds an Avro map (list of key/value structs): read back as a map. */
    static final String AVRO_MAP = "rollout:avro-map";

    /** The reason dead letters of a refused field carry. */
    public static final String REFUSED_REASON = "schema-refused";

    private static final Set<String> CONTRACT = Set.copyOf(RolloutSchema.allColumns());

    private AddedColumns() {}

    /** The added columns of a table's or a generation's schema, in their order. */
    public static List<Field> of(Schema schema) {
        return schema.getFields().stream()
                .filter(f -> !CONTRACT.contains(f.getName()))
                .toList();
    }

    /**
     * The schema rows are written to the base in: the contract's columns exactly as {@link RolloutSchema} has
     * them, then the base's added columns (no schema-level metadata: lance-core 7.0.0 aborts on it).
     */
    public static Schema tableSchema(Schema base) {
        List<Field> added = of(base);
        if (added.isEmpty()) {
            return RolloutSchema.SCHEMA;
        }
        List<Field> fields = new ArrayList<>(RolloutSchema.SCHEMA.getFields());
        fields.addAll(added);
        return new Schema(fields);
    }

    /** Their names. */
    public static List<String> names(Schema schema) {
        return of(schema).stream().map(Field::getName).toList();
    }

    /** Whether a column of this name belongs to the contract (or provenance), not to a producer. */
    static boolean contract(String name) {
        return CONTRACT.contains(name);
    }

    /**
     * The column a producer's field becomes (nullable: rows written before read null). A field named like a
     * provenance column, or of a type the table cannot hold (a union of several types), is refused.
     */
    public static Field columnFor(org.apache.avro.Schema.Field field) {
        if (CONTRACT.contains(field.name())) {
            throw refused("field " + field.name() + " has the name of a reserved column of the table");
        }
        return arrow(field.name(), field.schema());
    }

    private static Field arrow(String name, org.apache.avro.Schema schema) {
        return switch (schema.getType()) {
            case UNION -> {
                List<org.apache.avro.Schema> types = schema.getTypes().stream()
                        .filter(t -> t.getType() != org.apache.avro.Schema.Type.NULL)
                        .toList();
                if (types.size() != 1) {
                    throw refused("field " + name + " is a union of several types (" + schema
                            + "); the table holds a type or null");
                }
                yield arrow(name, types.get(0));
            }
            case NULL -> throw refused("field " + name + " is always null");
            case BOOLEAN -> leaf(name, ArrowType.Bool.INSTANCE);
            case INT -> leaf(name, new ArrowType.Int(32, true));
            case LONG -> leaf(name, new ArrowType.Int(64, true));
            case FLOAT -> leaf(name, new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE));
            case DOUBLE -> leaf(name, new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE));
            case STRING, ENUM -> leaf(name, ArrowType.Utf8.INSTANCE);
            case BYTES, FIXED -> leaf(name, ArrowType.Binary.INSTANCE);
            case ARRAY -> new Field(
                    name, FieldType.nullable(ArrowType.List.INSTANCE), List.of(arrow("item", schema.getElementType())));
            case MAP -> new Field(
                    name,
                    new FieldType(true, ArrowType.List.INSTANCE, null, Map.of(AVRO_MAP, "true")),
                    List.of(new Field(
                            "entry",
                            FieldType.nullable(ArrowType.Struct.INSTANCE),
                            List.of(leaf("key", ArrowType.Utf8.INSTANCE), arrow("value", schema.getValueType())))));
            case RECORD -> {
                List<Field> children = new ArrayList<>();
                for (org.apache.avro.Schema.Field child : schema.getFields()) {
                    children.add(arrow(child.name(), child.schema()));
                }
                yield new Field(name, FieldType.nullable(ArrowType.Struct.INSTANCE), children);
            }
        };
    }

    private static Field leaf(String name, ArrowType type) {
        return new Field(name, FieldType.nullable(type), null);
    }

    /**
     * Why a field's values cannot go into the table's column of its name (null when they can): the same type, or
     * one Avro promotes to the column's (see the class comment).
     */
    public static String conflict(Field column, Field wanted) {
        if (sameShape(column, wanted) || promotes(wanted.getType(), column.getType())) {
            return null;
        }
        return "field " + wanted.getName() + " is " + describe(wanted) + " but the table's column " + column.getName()
                + " is " + describe(column) + ", which Avro does not promote it to";
    }

    public static boolean sameShape(Field a, Field b) {
        if (!a.getType().equals(b.getType())
                || a.getChildren().size() != b.getChildren().size()) {
            return false;
        }
        boolean namedChildren = a.getType() instanceof ArrowType.Struct; // a list's item name varies by writer
        for (int i = 0; i < a.getChildren().size(); i++) {
            Field x = a.getChildren().get(i);
            Field y = b.getChildren().get(i);
            if (namedChildren && !x.getName().equals(y.getName()) || !sameShape(x, y)) {
                return false;
            }
        }
        return Objects.equals(a.getMetadata().get(AVRO_MAP), b.getMetadata().get(AVRO_MAP));
    }

    private static boolean promotes(ArrowType from, ArrowType to) {
        if (from instanceof ArrowType.Int i && i.getBitWidth() == 32) {
            return to instanceof ArrowType.Int j && j.getBitWidth() == 64 || to instanceof ArrowType.FloatingPoint;
        }
        if (from instanceof ArrowType.Int) {
            return to instanceof ArrowType.FloatingPoint;
        }
        if (from instanceof ArrowType.FloatingPoint f && f.getPrecision() == FloatingPointPrecision.SINGLE) {
            return to instanceof ArrowType.FloatingPoint g && g.getPrecision() == FloatingPointPrecision.DOUBLE;
        }
        return from instanceof ArrowType.Utf8 && to instanceof ArrowType.Binary
                || from instanceof ArrowType.Binary && to instanceof ArrowType.Utf8;
    }

    private static String describe(Field field) {
        return field.getChildren().isEmpty()
                ? field.getType().toString()
                : field.getType() + field.getChildren().toString();
    }

    /**
     * Adds the columns the base lacks (nullable: every row before reads null); a column another writer added
     * meanwhile is checked for its type instead. Safe to repeat: after a crash the next seal adds what is missing.
     * Returns the base's added columns after it, whose types the generation is then written in.
     */
    public static Map<String, Field> addToBase(LanceIo lance, List<Field> fields) {
        if (fields.isEmpty()) {
            return Map.of();
        }
        for (int attempt = 1; ; attempt++) {
            try (Dataset base = lance.openBase()) {
                List<Field> missing = new ArrayList<>();
                for (Field field : fields) {
                    Field existing = base.getSchema().getFields().stream()
                            .filter(f -> f.getName().equals(field.getName()))
                            .findFirst()
                            .orElse(null);
                    if (existing == null) {
                        missing.add(field);
                    } else if (conflict(existing, field) != null) {
                        // another producer added it first with another type: these rows cannot be written
                        throw new RolloutTableException(
                                "Table " + lance.location() + ": " + conflict(existing, field), null);
                    }
                }
                if (!missing.isEmpty()) {
                    base.addColumns(missing);
                    log.info(
                            "Table {}: added the columns {} producers' records carry (rows before read null)",
                            lance.location(),
                            missing.stream()
                                    .map(f -> f.getName() + " " + describe(f))
                                    .toList());
                }
                Map<String, Field> columns = new java.util.HashMap<>();
                try (Dataset after = lance.openBase()) {
                    of(after.getSchema()).forEach(f -> columns.put(f.getName(), f));
                }
                return columns;
            } catch (RolloutTableException e) {
                throw e;
            } catch (RuntimeException e) {
                // a merge or another writer committed meanwhile: read the base again and retry
                if (attempt >= 10) {
                    throw new RolloutTableException(
                            "Table " + lance.location() + ": adding columns "
                                    + fields.stream().map(Field::getName).toList() + " failed " + attempt + " times: "
                                    + e.getMessage(),
                            e);
                }
                log.info(
                        "Table {}: adding columns, attempt {} conflicted ({}); retrying",
                        lance.location(),
                        attempt,
                        e.getMessage());
                try {
                    Thread.sleep(20L * attempt);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    public static SerdeException refused(String message) {
        return new SerdeException(REFUSED_REASON, message, null);
    }
}
