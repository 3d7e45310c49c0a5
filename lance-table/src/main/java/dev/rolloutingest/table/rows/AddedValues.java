package dev.rolloutingest.table.rows;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;
import org.apache.avro.Schema;
import org.apache.avro.io.Decoder;
import org.apache.avro.io.ResolvingDecoder;
import org.apache.avro.util.Utf8;

/**
 * Values of added columns ({@link AddedColumns}): an Avro value decoded into its column, and a column's value read
 * back as plain Java (String, numbers, Boolean, byte[], List, Map) for the read API and the CLI. Only producers'
 * added fields go this way; the contract's columns keep their own allocation-free path in {@link ArrowRows}.
 */
public final class AddedValues {
    private AddedValues() {}

    /** Reads one value of {@code schema} from {@code in} as plain Java. */
    public static Object read(Decoder in, Schema schema) throws IOException {
        return switch (schema.getType()) {
            case UNION -> {
                int branch = in.readIndex();
                yield read(in, schema.getTypes().get(branch));
            }
            case NULL -> {
                in.readNull();
                yield null;
            }
            case BOOLEAN -> in.readBoolean();
            case INT -> in.readInt();
            case LONG -> in.readLong();
            case FLOAT -> in.readFloat();
            case DOUBLE -> in.readDouble();
            case STRING -> in.readString((Utf8) null).toString();
            case ENUM -> schema.getEnumSymbols().get(in.readEnum());
            case BYTES -> {
                ByteBuffer buffer = in.readBytes(null);
                byte[] bytes = new byte[buffer.remaining()];
                buffer.get(bytes);
                yield bytes;
            }
            case FIXED -> {
                byte[] bytes = new byte[schema.getFixedSize()];
                in.readFixed(bytes);
                yield bytes;
            }
            case ARRAY -> {
                List<Object> items = new ArrayList<>();
                for (long n = in.readArrayStart(); n != 0; n = in.arrayNext()) {
                    for (long k = 0; k < n; k++) {
                        items.add(read(in, schema.getElementType()));
                    }
                }
                yield items;
            }
            case MAP -> {
                Map<String, Object> entries = new LinkedHashMap<>();
                for (long n = in.readMapStart(); n != 0; n = in.mapNext()) {
                    for (long k = 0; k < n; k++) {
                        String key = in.readString((Utf8) null).toString();
                        entries.put(key, read(in, schema.getValueType()));
                    }
                }
                yield entries;
            }
            case RECORD -> {
                Map<String, Object> fields = new LinkedHashMap<>();
                Schema.Field[] order = in instanceof ResolvingDecoder resolving
                        ? resolving.readFieldOrder()
                        : schema.getFields().toArray(new Schema.Field[0]);
                for (Schema.Field field : order) {
                    fields.put(field.name(), read(in, field.schema()));
                }
                yield fields;
            }
        };
    }

    /** Writes a plain Java value (as {@link #read} makes) into row {@code i} of a column built by {@link AddedColumns}. */
    @SuppressWarnings("unchecked")
    public static void write(FieldVector vector, int i, Object value) {
        if (value == null) {
            setNull(vector, i);
            return;
        }
        if (vector instanceof BitVector v) {
            v.setSafe(i, ((Boolean) value) ? 1 : 0);
        } else if (vector instanceof IntVector v) {
            v.setSafe(i, ((Number) value).intValue());
        } else if (vector instanceof BigIntVector v) {
            v.setSafe(i, ((Number) value).longValue());
        } else if (vector instanceof Float4Vector v) {
            v.setSafe(i, ((Number) value).floatValue());
        } else if (vector instanceof Float8Vector v) {
            v.setSafe(i, ((Number) value).doubleValue());
        } else if (vector instanceof VarCharVector v) {
            v.setSafe(i, bytes(value));
        } else if (vector instanceof VarBinaryVector v) {
            v.setSafe(i, bytes(value));
        } else if (vector instanceof ListVector v) {
            FieldVector items = v.getDataVector();
            int start = v.startNewValue(i);
            int k = 0;
            if (value instanceof Map<?, ?> map) {
                StructVector entry = (StructVector) items;
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    entry.setIndexDefined(start + k);
                    write((FieldVector) entry.getChild("key"), start + k, e.getKey());
                    write((FieldVector) entry.getChild("value"), start + k, e.getValue());
                    k++;
                }
            } else {
                for (Object item : (List<Object>) value) {
                    write(items, start + k, item);
                    k++;
                }
            }
            v.endValue(i, k);
        } else if (vector instanceof StructVector v) {
            v.setIndexDefined(i);
            Map<String, Object> fields = (Map<String, Object>) value;
            for (FieldVector child : v.getChildrenFromFields()) {
                write(child, i, fields.get(child.getName()));
            }
        } else {
            throw new IllegalStateException("no writer for column " + vector.getField());
        }
    }

    private static byte[] bytes(Object value) {
        return value instanceof byte[] b ? b : value.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Makes row {@code i} of a column null again (a refused row's value must not stay). */
    public static void clear(FieldVector vector, int i) {
        if (i < vector.getValueCapacity()) {
            setNull(vector, i);
        }
    }

    private static void setNull(FieldVector vector, int i) {
        if (vector instanceof ListVector v) {
            v.setNull(i);
        } else if (vector instanceof StructVector v) {
            v.setNull(i);
        } else if (vector instanceof BaseFixedWidthVector v) {
            if (i < v.getValueCapacity()) { // beyond it the memory is fresh: null already
                v.setNull(i);
            }
        } else if (vector instanceof BaseVariableWidthVector v) {
            v.setNull(i);
        } else {
            throw new IllegalStateException("no null for column " + vector.getField());
        }
    }

    /** A column's value at row {@code i} as plain Java: null, String, a number, Boolean, byte[], List or Map. */
    public static Object valueAt(ValueVector vector, int i) {
        if (vector.isNull(i)) {
            return null;
        }
        if (vector instanceof VarCharVector v) {
            return new String(v.get(i), StandardCharsets.UTF_8);
        }
        if (vector instanceof VarBinaryVector v) {
            return v.get(i);
        }
        if (vector instanceof ListVector v) {
            ValueVector items = v.getDataVector();
            int start = v.getElementStartIndex(i);
            int end = v.getElementEndIndex(i);
            if ("true".equals(v.getField().getMetadata().get(AddedColumns.AVRO_MAP))) {
                StructVector entry = (StructVector) items;
                Map<String, Object> map = new LinkedHashMap<>();
                for (int k = start; k < end; k++) {
                    map.put((String) valueAt(entry.getChild("key"), k), valueAt(entry.getChild("value"), k));
                }
                return map;
            }
            List<Object> list = new ArrayList<>();
            for (int k = start; k < end; k++) {
                list.add(valueAt(items, k));
            }
            return list;
        }
        if (vector instanceof StructVector v) {
            Map<String, Object> fields = new LinkedHashMap<>();
            for (FieldVector child : v.getChildrenFromFields()) {
                fields.put(child.getName(), valueAt(child, i));
            }
            return fields;
        }
        return vector.getObject(i);
    }
}
