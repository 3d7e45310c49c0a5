package dev.rolloutingest.serde.values;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.OneofDescriptor;
import dev.rolloutingest.serde.SerdeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaParseException;

/**
 * What one Protobuf message of one schema id maps to, made once and shared by every thread: each field's slot (the
 * contract's fields at their ordinals, the fields it adds after them), the wire types a slot takes, its oneof, and
 * the reader fields of the added ones. A contract field of a type it cannot take is the plan's {@link #schemaError},
 * thrown for each record of the schema.
 */
final class ProtobufPlan {
    static final int CONTRACT = ContractField.ALL.length;
    private static final int SMALL_NUMBERS = 1024;

    final int schemaId;
    final Descriptor message;
    /** Contract fields first (by ordinal, null when the message lacks one), then the added fields. */
    final FieldDescriptor[] slots;
    /** The wire type of each slot's values: a packable repeated field also takes them packed (length-delimited). */
    final int[] wireTypes;

    final boolean[] packable;
    /** Per slot, its (real) oneof's index in the message, or -1. */
    final int[] oneofs;

    final int oneofCount;
    final List<String> addedNames;
    /** Per added slot, its reader field when added fields are kept. */
    final Schema.Field[] addedReaderFields;

    final SerdeException schemaError;
    private final int[] slotByNumber;
    private final Map<Integer, Integer> slotByLargeNumber = new HashMap<>();

    private ProtobufPlan(int schemaId, Descriptor message, AddedFields added) {
        this.schemaId = schemaId;
        this.message = message;
        List<FieldDescriptor> slotList = new ArrayList<>(Arrays.asList(new FieldDescriptor[CONTRACT]));
        SerdeException error = null;
        List<String> names = new ArrayList<>();
        List<Schema> types = new ArrayList<>();
        for (FieldDescriptor fd : message.getFields()) {
            ContractField contract = ContractField.named(fd.getName());
            if (contract != null) {
                String problem = fits(contract, fd);
                if (problem != null && error == null) {
                    error = ValueErrors.wrongType(
                            contract.fieldName, problem, where(fd) + " of Protobuf schema id " + schemaId);
                }
                slotList.set(contract.ordinal(), fd);
            } else {
                slotList.add(fd);
                names.add(fd.getName());
                if (added.keep() && error == null) {
                    try {
                        types.add(avroOf(fd, 0));
                    } catch (SerdeException e) {
                        error = e;
                    } catch (SchemaParseException e) {
                        error = ValueErrors.of(
                                "schema-refused",
                                "field " + fd.getName() + " cannot be a column: " + e.getMessage(),
                                e);
                    }
                }
            }
        }
        this.slots = slotList.toArray(new FieldDescriptor[0]);
        this.addedNames = List.copyOf(names);
        this.addedReaderFields = new Schema.Field[names.size()];
        if (added.keep() && error == null) {
            try {
                for (int i = 0; i < names.size(); i++) {
                    addedReaderFields[i] = added.field(schemaId, names.get(i), types.get(i));
                }
            } catch (SerdeException e) {
                error = e;
            }
        }
        this.schemaError = error;
        List<OneofDescriptor> realOneofs = message.getRealOneofs();
        this.oneofCount = realOneofs.size();
        this.wireTypes = new int[slots.length];
        this.packable = new boolean[slots.length];
        this.oneofs = new int[slots.length];
        int maxSmall = 0;
        for (int i = 0; i < slots.length; i++) {
            FieldDescriptor fd = slots[i];
            oneofs[i] = -1;
            if (fd == null) {
                continue;
            }
            wireTypes[i] = fd.getLiteType().getWireType();
            packable[i] = fd.isPackable();
            OneofDescriptor oneof = fd.getRealContainingOneof();
            if (oneof != null) {
                oneofs[i] = realOneofs.indexOf(oneof);
            }
            if (fd.getNumber() < SMALL_NUMBERS) {
                maxSmall = Math.max(maxSmall, fd.getNumber());
            }
        }
        slotByNumber = new int[maxSmall + 1];
        Arrays.fill(slotByNumber, -1);
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] == null) {
                continue;
            }
            int number = slots[i].getNumber();
            if (number < slotByNumber.length) {
                slotByNumber[number] = i;
            } else {
                slotByLargeNumber.put(number, i);
            }
        }
    }

    static ProtobufPlan of(int schemaId, Descriptor message, AddedFields addedFields) {
        return new ProtobufPlan(schemaId, message, addedFields);
    }

    /** The slot of a field number, -1 for a number the message lacks. */
    int slot(int number) {
        if (number >= 0 && number < slotByNumber.length) {
            return slotByNumber[number];
        }
        Integer slot = slotByLargeNumber.get(number);
        return slot == null ? -1 : slot;
    }

    /** Why a field of the message cannot be the contract's field (null when it can). */
    private static String fits(ContractField contract, FieldDescriptor fd) {
        FieldDescriptor.JavaType type = fd.getJavaType();
        boolean integer = type == FieldDescriptor.JavaType.INT || type == FieldDescriptor.JavaType.LONG;
        boolean number = integer || type == FieldDescriptor.JavaType.FLOAT || type == FieldDescriptor.JavaType.DOUBLE;
        boolean repeated = fd.isRepeated();
        boolean ok =
                switch (contract.kind) {
                    case STRING, NULLABLE_STRING -> !repeated && type == FieldDescriptor.JavaType.STRING;
                    case INT, NULLABLE_LONG -> !repeated && integer;
                    case NULLABLE_FLOAT -> !repeated && number;
                    case BOOLEAN -> !repeated && type == FieldDescriptor.JavaType.BOOLEAN;
                    case NULLABLE_BYTES -> !repeated && type == FieldDescriptor.JavaType.BYTE_STRING;
                    case TIMESTAMP -> !repeated
                            && (integer
                                    || type == FieldDescriptor.JavaType.STRING
                                    || fd.getType() == FieldDescriptor.Type.MESSAGE
                                            && fd.getMessageType().getFullName().equals("google.protobuf.Timestamp"));
                    case INT_ARRAY -> repeated && integer;
                    case FLOAT_ARRAY -> repeated && number && !integer;
                    case STRING_MAP -> fd.isMapField()
                            && fd.getMessageType().findFieldByNumber(1).getJavaType() == FieldDescriptor.JavaType.STRING
                            && fd.getMessageType().findFieldByNumber(2).getJavaType()
                                    == FieldDescriptor.JavaType.STRING;
                };
        if (ok) {
            return null;
        }
        return switch (contract.kind) {
            case STRING, NULLABLE_STRING -> "string";
            case INT, NULLABLE_LONG -> "an integer type";
            case NULLABLE_FLOAT -> "float or double";
            case BOOLEAN -> "bool";
            case NULLABLE_BYTES -> "bytes";
            case TIMESTAMP -> "google.protobuf.Timestamp, an integer of epoch milliseconds or an ISO-8601 string";
            case INT_ARRAY -> "repeated integers";
            case FLOAT_ARRAY -> "repeated float or double";
            case STRING_MAP -> "map<string, string>";
        };
    }

    private static String where(FieldDescriptor fd) {
        String type = fd.isMapField()
                ? "a map"
                : fd.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                        ? fd.getMessageType().getFullName()
                        : fd.getType().name().toLowerCase();
        return (fd.isRepeated() && !fd.isMapField() ? "repeated " : "") + type + " in message "
                + fd.getContainingType().getFullName();
    }

    /**
     * A message's full name as an Avro record name: what Avro's names cannot hold (a package in a hand-made
     * descriptor may) becomes '_'.
     */
    private static String recordName(String fullName) {
        StringBuilder name = new StringBuilder(fullName.length() + 1);
        for (char c : fullName.toCharArray()) {
            name.append(c < 0x80 && (Character.isLetterOrDigit(c) || c == '_') ? c : '_');
        }
        if (name.length() == 0 || Character.isDigit(name.charAt(0))) {
            name.insert(0, '_');
        }
        return name.toString();
    }

    /**
     * The Avro type an added field becomes: integers as int or long (unsigned 32-bit ones as long), enums as their
     * names, messages and groups as records, repeated fields as arrays, maps with string keys as maps (other maps as
     * arrays of key-value records), a field with presence as a union with null.
     */
    static Schema avroOf(FieldDescriptor fd, int depth) {
        if (fd.isMapField()) {
            FieldDescriptor key = fd.getMessageType().findFieldByNumber(1);
            FieldDescriptor value = fd.getMessageType().findFieldByNumber(2);
            if (key.getJavaType() == FieldDescriptor.JavaType.STRING) {
                return Schema.createMap(single(value, depth + 1));
            }
            return Schema.createArray(single(fd, depth + 1));
        }
        if (fd.isRepeated()) {
            return Schema.createArray(single(fd, depth + 1));
        }
        if (fd.hasPresence()) {
            return Schema.createUnion(Schema.create(Schema.Type.NULL), single(fd, depth + 1));
        }
        return single(fd, depth + 1);
    }

    private static Schema single(FieldDescriptor fd, int depth) {
        return switch (fd.getType()) {
            case INT32, SINT32, SFIXED32 -> Schema.create(Schema.Type.INT);
            case INT64, SINT64, SFIXED64, UINT32, FIXED32, UINT64, FIXED64 -> Schema.create(Schema.Type.LONG);
            case FLOAT -> Schema.create(Schema.Type.FLOAT);
            case DOUBLE -> Schema.create(Schema.Type.DOUBLE);
            case BOOL -> Schema.create(Schema.Type.BOOLEAN);
            case STRING, ENUM -> Schema.create(Schema.Type.STRING);
            case BYTES -> Schema.create(Schema.Type.BYTES);
            case MESSAGE, GROUP -> {
                if (depth > AddedFields.MAX_NESTING) {
                    throw ValueErrors.of(
                            "schema-refused",
                            "field " + fd.getFullName() + " nests messages deeper than " + AddedFields.MAX_NESTING
                                    + " (a recursive message cannot be a column)");
                }
                List<Schema.Field> fields = new ArrayList<>();
                for (FieldDescriptor child : fd.getMessageType().getFields()) {
                    fields.add(new Schema.Field(child.getName(), avroOf(child, depth)));
                }
                yield Schema.createRecord(recordName(fd.getMessageType().getFullName()), null, null, false, fields);
            }
        };
    }
}
