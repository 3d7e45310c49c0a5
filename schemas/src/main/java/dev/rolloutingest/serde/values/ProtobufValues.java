package dev.rolloutingest.serde.values;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import dev.rolloutingest.serde.SerdeException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * A Protobuf message mapped to the contract by field name, read off the wire by hand (no message objects) and
 * written to an {@link AvroTape}. What each contract field takes, checked once per schema ({@link Plan}):
 * <ul>
 *   <li>strings: {@code string}; int and long fields: any integer type (values that do not fit are {@code
 *       wrong-type}); floats: {@code float} or {@code double}; include_in_training: {@code bool}; binary_payload:
 *       {@code bytes}; the token lists: {@code repeated} integers (packed or not); output_logprobs: {@code repeated}
 *       float or double; metadata: {@code map<string, string>};
 *   <li>created_at: {@code google.protobuf.Timestamp} (nanoseconds cut to microseconds), an integer of epoch
 *       milliseconds, or an ISO-8601 string;
 *   <li>a field that has presence ({@code optional}, a message) and is absent is null or the contract's default; a
 *       proto3 field without presence that is absent holds Protobuf's default (0, "", false, empty), as the producer
 *       meant; a required contract field the message does not declare, or a created_at left unset, is {@code
 *       missing-field}.
 * </ul>
 * The message's other fields are added fields ({@link AddedFields}), typed by the schema: integers as int or long,
 * enums as their names, messages as records, repeated fields as arrays, maps with string keys as maps.
 *
 * <p>One per thread: it keeps the read's state (the occurrences of fields, the wire position). Plans are shared.
 */
final class ProtobufValues {
    private static final int CONTRACT = ContractField.ALL.length;
    private static final int MAX_DEPTH = 32;

    private final AddedFields addedFields;
    private final Scan scan = new Scan();

    ProtobufValues(AddedFields addedFields) {
        this.addedFields = addedFields;
    }

    /** What one message of one schema id maps to: made once, then every record of it reads through it. */
    static final class Plan {
        final int schemaId;
        final Descriptor message;
        final FieldDescriptor[] slots; // contract fields first (by ordinal, null when absent), then added fields
        final Schema.Field[] addedReaderFields; // per added slot, when kept
        final List<String> addedNames;
        final int[] slotByNumber; // field numbers below its length
        final Map<Integer, Integer> slotByLargeNumber;
        final SerdeException schemaError;

        private Plan(int schemaId, Descriptor message, AddedFields added) {
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
                        }
                    }
                }
            }
            this.slots = slotList.toArray(new FieldDescriptor[0]);
            this.addedNames = List.copyOf(names);
            this.addedReaderFields = new Schema.Field[names.size()];
            if (added.keep() && error == null) {
                for (int i = 0; i < names.size(); i++) {
                    addedReaderFields[i] = added.field(schemaId, names.get(i), types.get(i));
                }
            }
            int maxSmall = 0;
            for (FieldDescriptor fd : slots) {
                if (fd != null && fd.getNumber() < 1024) {
                    maxSmall = Math.max(maxSmall, fd.getNumber());
                }
            }
            slotByNumber = new int[maxSmall + 1];
            Arrays.fill(slotByNumber, -1);
            slotByLargeNumber = new HashMap<>();
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
            this.schemaError = error;
        }

        int slot(int number) {
            if (number >= 0 && number < slotByNumber.length) {
                return slotByNumber[number];
            }
            Integer slot = slotByLargeNumber.get(number);
            return slot == null ? -1 : slot;
        }
    }

    static Plan plan(int schemaId, Descriptor message, AddedFields addedFields) {
        return new Plan(schemaId, message, addedFields);
    }

    /** One thread's occurrences of fields in the message being read: linked per slot, in wire order. */
    private static final class Scan {
        int count;
        int[] wire = new int[64];
        int[] start = new int[64];
        int[] end = new int[64];
        int[] next = new int[64];
        int[] head = new int[32];
        int[] tail = new int[32];

        void reset(int slots) {
            count = 0;
            if (head.length < slots) {
                head = new int[slots];
                tail = new int[slots];
            }
            Arrays.fill(head, 0, slots, -1);
        }

        void add(int slot, int wireType, int from, int to) {
            if (count == wire.length) {
                int n = count * 2;
                wire = Arrays.copyOf(wire, n);
                start = Arrays.copyOf(start, n);
                end = Arrays.copyOf(end, n);
                next = Arrays.copyOf(next, n);
            }
            wire[count] = wireType;
            start[count] = from;
            end[count] = to;
            next[count] = -1;
            if (head[slot] < 0) {
                head[slot] = count;
            } else {
                next[tail[slot]] = count;
            }
            tail[slot] = count;
            count++;
        }
    }

    /** Writes the row of the message in {@code bytes[offset, end)} to {@code tape}. */
    void read(Plan plan, byte[] bytes, int offset, int end, AvroTape tape) {
        if (plan.schemaError != null) {
            throw plan.schemaError;
        }
        tape.reset();
        scan.reset(plan.slots.length);
        try {
            int p = offset;
            while (p < end) {
                long tag = varint(bytes, p, end);
                p = next;
                int number = (int) (tag >>> 3);
                int wireType = (int) (tag & 7);
                int slot = plan.slot(number);
                if (slot < 0) {
                    throw ValueErrors.of(
                            ValueErrors.NOT_PROTOBUF,
                            "field number " + number + " is not in message " + plan.message.getFullName()
                                    + " of Protobuf schema id " + plan.schemaId
                                    + " (a newer schema than the one the record names, or not this message)");
                }
                int from = p;
                p = skip(bytes, p, end, wireType);
                if (wireType == 2) {
                    from = next; // the length-delimited value's first byte, after its length
                }
                scan.add(slot, wireType, from, p);
            }
            for (ContractField field : ContractField.ALL) {
                contract(plan, field, bytes, scan, tape);
            }
            if (!plan.addedNames.isEmpty()) {
                if (!addedFields.keep()) {
                    addedFields.dropped(plan.schemaId, plan.addedNames);
                } else {
                    for (int i = 0; i < plan.addedNames.size(); i++) {
                        int slot = CONTRACT + i;
                        if (scan.head[slot] < 0 && plan.slots[slot].hasPresence()) {
                            continue; // absent: null in the row
                        }
                        tape.field(plan.addedReaderFields[i]);
                        List<int[]> occurrences = new ArrayList<>();
                        for (int o = scan.head[slot]; o >= 0; o = scan.next[o]) {
                            occurrences.add(new int[] {scan.wire[o], scan.start[o], scan.end[o]});
                        }
                        field(plan.slots[slot], bytes, occurrences, plan.slots[slot].getName(), tape, 0);
                    }
                }
            }
        } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
            throw ValueErrors.of(
                    ValueErrors.NOT_PROTOBUF,
                    "the value is truncated or not a Protobuf " + plan.message.getFullName() + " (schema id "
                            + plan.schemaId + "): " + e.getMessage(),
                    e);
        }
    }

    // ---- the contract's fields ----

    private void contract(Plan plan, ContractField field, byte[] b, Scan scan, AvroTape tape) {
        FieldDescriptor fd = plan.slots[field.ordinal()];
        if (fd == null) {
            JsonValues.absent(
                    field,
                    "not in message " + plan.message.getFullName() + " of Protobuf schema id " + plan.schemaId,
                    tape);
            return;
        }
        int first = scan.head[field.ordinal()];
        int last = first < 0 ? -1 : scan.tail[field.ordinal()];
        if (first < 0 && (fd.hasPresence() || field.kind == ContractField.Kind.TIMESTAMP)) {
            JsonValues.absent(field, "unset", tape);
            return;
        }
        tape.field(field.field);
        String name = field.fieldName;
        switch (field.kind) {
            case STRING -> string(b, scan, last, name, tape);
            case NULLABLE_STRING -> {
                tape.writeIndex(1);
                string(b, scan, last, name, tape);
            }
            case INT -> {
                long v = last < 0 ? 0 : integer(fd, scan.wire[last], b, scan.start[last], name);
                if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
                    throw ValueErrors.wrongType(name, "a whole number within 32 bits", Long.toString(v));
                }
                tape.writeInt((int) v);
            }
            case NULLABLE_LONG -> {
                tape.writeIndex(1);
                tape.writeLong(last < 0 ? 0 : integer(fd, scan.wire[last], b, scan.start[last], name));
            }
            case NULLABLE_FLOAT -> {
                tape.writeIndex(1);
                tape.writeFloat(last < 0 ? 0f : (float) number(fd, scan.wire[last], b, scan.start[last], name));
            }
            case BOOLEAN -> tape.writeBoolean(
                    last >= 0 && integer(fd, scan.wire[last], b, scan.start[last], name) != 0);
            case NULLABLE_BYTES -> {
                tape.writeIndex(1);
                if (last < 0) {
                    tape.writeLong(0);
                } else {
                    requireWire(2, scan.wire[last], name);
                    tape.writeBytes(b, scan.start[last], scan.end[last] - scan.start[last]);
                }
            }
            case TIMESTAMP -> tape.writeLong(timestamp(fd, b, scan, last, name));
            case INT_ARRAY -> intArray(fd, b, scan, first, name, tape);
            case FLOAT_ARRAY -> floatArray(fd, b, scan, first, name, tape);
            case STRING_MAP -> stringMap(b, scan, first, name, tape);
        }
    }

    private static void string(byte[] b, Scan scan, int occurrence, String name, AvroTape tape) {
        if (occurrence < 0) {
            tape.writeLong(0);
            return;
        }
        requireWire(2, scan.wire[occurrence], name);
        int from = scan.start[occurrence];
        int length = scan.end[occurrence] - from;
        requireUtf8(b, from, length, name);
        tape.writeBytes(b, from, length);
    }

    private long timestamp(FieldDescriptor fd, byte[] b, Scan scan, int last, String name) {
        int from = scan.start[last];
        int to = scan.end[last];
        return switch (fd.getJavaType()) {
            case MESSAGE -> {
                requireWire(2, scan.wire[last], name);
                long seconds = 0;
                long nanos = 0;
                for (int p = from; p < to; ) {
                    long tag = varint(b, p, to);
                    p = next;
                    int wireType = (int) (tag & 7);
                    if (wireType == 0 && (tag >>> 3) == 1) {
                        seconds = varint(b, p, to);
                    } else if (wireType == 0 && (tag >>> 3) == 2) {
                        nanos = (int) varint(b, p, to);
                    }
                    p = skip(b, p, to, wireType);
                }
                try {
                    yield Math.addExact(Math.multiplyExact(seconds, 1_000_000L), nanos / 1000);
                } catch (ArithmeticException e) {
                    throw ValueErrors.wrongType(name, "a timestamp within 64-bit microseconds", seconds + " s");
                }
            }
            case STRING -> {
                requireWire(2, scan.wire[last], name);
                String text = new String(b, from, to - from, StandardCharsets.UTF_8);
                try {
                    yield JsonValues.micros(text);
                } catch (RuntimeException e) {
                    throw ValueErrors.wrongType(name, "an ISO-8601 date-time", "'" + text + "'");
                }
            }
            default -> {
                long millis = integer(fd, scan.wire[last], b, from, name);
                try {
                    yield Math.multiplyExact(millis, 1000L);
                } catch (ArithmeticException e) {
                    throw ValueErrors.wrongType(name, "epoch milliseconds within 64-bit microseconds", "" + millis);
                }
            }
        };
    }

    private void intArray(FieldDescriptor fd, byte[] b, Scan scan, int first, String name, AvroTape tape) {
        int n = 0;
        int[] items = tape.ints;
        for (int o = first; o >= 0; o = scan.next[o]) {
            int wireType = scan.wire[o];
            int p = scan.start[o];
            int end = wireType == 2 ? scan.end[o] : p + 1; // packed, or one value
            while (p < end) {
                long v = integer(fd, wireType == 2 ? wireOf(fd) : wireType, b, p, name);
                p = next;
                if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
                    throw ValueErrors.wrongType(name + "[" + n + "]", "a whole number within 32 bits", "" + v);
                }
                if (n == items.length) {
                    items = tape.ints(n + 1);
                }
                items[n++] = (int) v;
                if (wireType != 2) {
                    break;
                }
            }
            if (wireType == 2 && p != end) {
                throw new IndexOutOfBoundsException("packed " + name + " runs past its length");
            }
        }
        if (n > 0) {
            tape.writeLong(n);
            for (int i = 0; i < n; i++) {
                tape.writeInt(items[i]);
            }
        }
        tape.writeLong(0);
    }

    private void floatArray(FieldDescriptor fd, byte[] b, Scan scan, int first, String name, AvroTape tape) {
        int n = 0;
        float[] items = tape.floats;
        for (int o = first; o >= 0; o = scan.next[o]) {
            int wireType = scan.wire[o];
            int p = scan.start[o];
            int end = wireType == 2 ? scan.end[o] : p + 1;
            while (p < end) {
                float v = (float) number(fd, wireType == 2 ? wireOf(fd) : wireType, b, p, name);
                p = next;
                if (n == items.length) {
                    items = tape.floats(n + 1);
                }
                items[n++] = v;
                if (wireType != 2) {
                    break;
                }
            }
            if (wireType == 2 && p != end) {
                throw new IndexOutOfBoundsException("packed " + name + " runs past its length");
            }
        }
        if (n > 0) {
            tape.writeLong(n);
            for (int i = 0; i < n; i++) {
                tape.writeFloat(items[i]);
            }
        }
        tape.writeLong(0);
    }

    private void stringMap(byte[] b, Scan scan, int first, String name, AvroTape tape) {
        int entries = 0;
        for (int o = first; o >= 0; o = scan.next[o]) {
            requireWire(2, scan.wire[o], name);
            entries++;
        }
        if (entries > 0) {
            tape.writeLong(entries);
            for (int o = first; o >= 0; o = scan.next[o]) {
                int keyFrom = 0;
                int keyTo = 0;
                int valueFrom = 0;
                int valueTo = 0;
                for (int p = scan.start[o], to = scan.end[o]; p < to; ) {
                    long tag = varint(b, p, to);
                    p = next;
                    int wireType = (int) (tag & 7);
                    int at = p;
                    p = skip(b, p, to, wireType);
                    if (wireType == 2 && (tag >>> 3) == 1) {
                        keyFrom = next;
                        keyTo = p;
                    } else if (wireType == 2 && (tag >>> 3) == 2) {
                        valueFrom = next;
                        valueTo = p;
                    } else {
                        throw ValueErrors.wrongType(
                                name, "map<string, string> entries", "wire type " + wireType + " at " + at);
                    }
                }
                requireUtf8(b, keyFrom, keyTo - keyFrom, name);
                requireUtf8(b, valueFrom, valueTo - valueFrom, name);
                tape.writeBytes(b, keyFrom, keyTo - keyFrom);
                tape.writeBytes(b, valueFrom, valueTo - valueFrom);
            }
        }
        tape.writeLong(0);
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
                                    || type == FieldDescriptor.JavaType.MESSAGE
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

    // ---- added fields: typed by the schema ----

    /** The Avro type a message field becomes. */
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
                if (depth > MAX_DEPTH) {
                    throw ValueErrors.of(
                            "schema-refused",
                            "field " + fd.getFullName() + " nests messages deeper than " + MAX_DEPTH
                                    + " (a recursive message cannot be a column)");
                }
                List<Schema.Field> fields = new ArrayList<>();
                for (FieldDescriptor child : fd.getMessageType().getFields()) {
                    fields.add(new Schema.Field(child.getName(), avroOf(child, depth)));
                }
                yield Schema.createRecord(
                        fd.getMessageType().getFullName().replace('.', '_'), null, null, false, fields);
            }
        };
    }

    /** Writes a field's value (its occurrences {wire, start, end} in wire order) in the Avro encoding of avroOf. */
    private void field(FieldDescriptor fd, byte[] b, List<int[]> occurrences, String path, AvroTape tape, int depth) {
        if (fd.isMapField()) {
            FieldDescriptor key = fd.getMessageType().findFieldByNumber(1);
            FieldDescriptor value = fd.getMessageType().findFieldByNumber(2);
            boolean stringKeys = key.getJavaType() == FieldDescriptor.JavaType.STRING;
            if (!occurrences.isEmpty()) {
                tape.writeLong(occurrences.size());
                for (int[] entry : occurrences) {
                    requireWire(2, entry[0], path);
                    Map<Integer, List<int[]>> parts = scanMessage(b, entry[1], entry[2]);
                    if (stringKeys) {
                        single(key, b, last(parts.get(1)), path + ".key", tape, depth);
                        single(value, b, last(parts.get(2)), path + ".value", tape, depth);
                    } else {
                        message(fd.getMessageType(), b, parts, path, tape, depth);
                    }
                }
            }
            tape.writeLong(0);
            return;
        }
        if (fd.isRepeated()) {
            List<int[]> items = new ArrayList<>();
            for (int[] o : occurrences) {
                if (o[0] == 2 && fd.isPackable()) {
                    int wireType = wireOf(fd);
                    for (int p = o[1]; p < o[2]; ) {
                        int from = p;
                        p = skip(b, p, o[2], wireType);
                        items.add(new int[] {wireType, from, p});
                    }
                } else {
                    items.add(o);
                }
            }
            if (!items.isEmpty()) {
                tape.writeLong(items.size());
                for (int i = 0; i < items.size(); i++) {
                    single(fd, b, items.get(i), path + "[" + i + "]", tape, depth);
                }
            }
            tape.writeLong(0);
            return;
        }
        int[] last = last(occurrences);
        if (fd.hasPresence()) {
            tape.writeIndex(last == null ? 0 : 1);
            if (last == null) {
                return;
            }
        }
        single(fd, b, last, path, tape, depth);
    }

    /** One value (null: the type's default) in the Avro encoding of single(fd). */
    private void single(FieldDescriptor fd, byte[] b, int[] o, String path, AvroTape tape, int depth) {
        switch (fd.getJavaType()) {
            case INT, LONG -> tape.writeLong(o == null ? 0 : integer(fd, o[0], b, o[1], path));
            case FLOAT -> tape.writeFloat(o == null ? 0f : (float) number(fd, o[0], b, o[1], path));
            case DOUBLE -> tape.writeDouble(o == null ? 0d : number(fd, o[0], b, o[1], path));
            case BOOLEAN -> tape.writeBoolean(o != null && integer(fd, o[0], b, o[1], path) != 0);
            case STRING, BYTE_STRING -> {
                if (o == null) {
                    tape.writeLong(0);
                } else {
                    requireWire(2, o[0], path);
                    if (fd.getJavaType() == FieldDescriptor.JavaType.STRING) {
                        requireUtf8(b, o[1], o[2] - o[1], path);
                    }
                    tape.writeBytes(b, o[1], o[2] - o[1]);
                }
            }
            case ENUM -> {
                int number = o == null ? 0 : (int) integer(fd, o[0], b, o[1], path);
                EnumValueDescriptor value = fd.getEnumType().findValueByNumber(number);
                tape.writeString(value == null ? Integer.toString(number) : value.getName());
            }
            case MESSAGE -> {
                Map<Integer, List<int[]>> parts;
                if (o == null) {
                    parts = Map.of();
                } else {
                    requireWire(2, o[0], path);
                    parts = scanMessage(b, o[1], o[2]);
                }
                message(fd.getMessageType(), b, parts, path, tape, depth + 1);
            }
        }
    }

    private void message(
            Descriptor type, byte[] b, Map<Integer, List<int[]>> parts, String path, AvroTape tape, int depth) {
        for (FieldDescriptor child : type.getFields()) {
            List<int[]> occurrences = parts.getOrDefault(child.getNumber(), List.of());
            field(child, b, occurrences, path + "." + child.getName(), tape, depth);
        }
    }

    private Map<Integer, List<int[]>> scanMessage(byte[] b, int from, int to) {
        Map<Integer, List<int[]>> parts = new HashMap<>();
        for (int p = from; p < to; ) {
            long tag = varint(b, p, to);
            p = next;
            int wireType = (int) (tag & 7);
            int start = p;
            p = skip(b, p, to, wireType);
            if (wireType == 2) {
                start = next;
            }
            parts.computeIfAbsent((int) (tag >>> 3), k -> new ArrayList<>()).add(new int[] {wireType, start, p});
        }
        return parts;
    }

    private static int[] last(List<int[]> occurrences) {
        return occurrences == null || occurrences.isEmpty() ? null : occurrences.get(occurrences.size() - 1);
    }

    // ---- the wire ----

    /** Where the last varint read (or the last length-delimited length) ended: set by varint() and skip(). */
    private int next;

    private long varint(byte[] b, int p, int end) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p >= end) {
                throw new IndexOutOfBoundsException("a varint runs past the end");
            }
            byte x = b[p++];
            value |= (long) (x & 0x7f) << shift;
            if (x >= 0) {
                next = p;
                return value;
            }
        }
        throw new IllegalArgumentException("a varint longer than 10 bytes");
    }

    /** The position after the value of this wire type at {@code p}; for wire type 2, {@link #next} is its start. */
    private int skip(byte[] b, int p, int end, int wireType) {
        int after;
        switch (wireType) {
            case 0 -> {
                varint(b, p, end);
                after = next;
            }
            case 1 -> after = p + 8;
            case 2 -> {
                long length = varint(b, p, end);
                if (length < 0 || length > end - next) {
                    throw new IndexOutOfBoundsException("a length of " + length + " runs past the end");
                }
                after = next + (int) length;
                // next stays the value's start
                if (after > end) {
                    throw new IndexOutOfBoundsException("a value runs past the end");
                }
                return after;
            }
            case 5 -> after = p + 4;
            default -> throw new IllegalArgumentException("wire type " + wireType + " (groups are not read)");
        }
        if (after > end) {
            throw new IndexOutOfBoundsException("a value runs past the end");
        }
        next = after;
        return after;
    }

    private static int wireOf(FieldDescriptor fd) {
        return switch (fd.getType()) {
            case DOUBLE, FIXED64, SFIXED64 -> 1;
            case FLOAT, FIXED32, SFIXED32 -> 5;
            case STRING, BYTES, MESSAGE -> 2;
            default -> 0;
        };
    }

    /** An integer-typed (or bool, enum) value at {@code p}; {@link #next} is set after it. */
    private long integer(FieldDescriptor fd, int wireType, byte[] b, int p, String name) {
        requireWire(wireOf(fd), wireType, name);
        return switch (fd.getType()) {
            case SINT32, SINT64 -> {
                long v = varint(b, p, b.length);
                yield (v >>> 1) ^ -(v & 1);
            }
            case UINT32 -> varint(b, p, b.length) & 0xFFFFFFFFL;
            case UINT64 -> {
                long v = varint(b, p, b.length);
                if (v < 0) {
                    throw ValueErrors.wrongType(name, "a whole number within 64 bits", Long.toUnsignedString(v));
                }
                yield v;
            }
            case INT32, ENUM -> (int) varint(b, p, b.length);
            case FIXED32 -> fixed32(b, p) & 0xFFFFFFFFL;
            case SFIXED32 -> fixed32(b, p);
            case FIXED64 -> {
                long v = fixed64(b, p);
                if (v < 0) {
                    throw ValueErrors.wrongType(name, "a whole number within 64 bits", Long.toUnsignedString(v));
                }
                yield v;
            }
            case SFIXED64 -> fixed64(b, p);
            default -> varint(b, p, b.length); // INT64, BOOL
        };
    }

    private double number(FieldDescriptor fd, int wireType, byte[] b, int p, String name) {
        return switch (fd.getType()) {
            case FLOAT -> {
                requireWire(5, wireType, name);
                yield Float.intBitsToFloat(fixed32(b, p));
            }
            case DOUBLE -> {
                requireWire(1, wireType, name);
                yield Double.longBitsToDouble(fixed64(b, p));
            }
            default -> integer(fd, wireType, b, p, name);
        };
    }

    private int fixed32(byte[] b, int p) {
        next = p + 4;
        return (b[p] & 0xff) | (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff) << 16 | (b[p + 3] & 0xff) << 24;
    }

    private long fixed64(byte[] b, int p) {
        next = p + 8;
        return (fixed32(b, p) & 0xFFFFFFFFL) | (long) fixed32(b, p + 4) << 32;
    }

    private static void requireWire(int wanted, int got, String name) {
        if (wanted != got) {
            throw ValueErrors.of(
                    ValueErrors.NOT_PROTOBUF,
                    "field " + name + " has wire type " + got + ", its type in the schema needs " + wanted);
        }
    }

    private static void requireUtf8(byte[] b, int from, int length, String name) {
        for (int i = from, end = from + length; i < end; i++) {
            if (b[i] < 0) {
                try {
                    StandardCharsets.UTF_8
                            .newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(b, from, length));
                    return;
                } catch (CharacterCodingException e) {
                    throw ValueErrors.wrongType(name, "UTF-8 text", "bytes that are not UTF-8");
                }
            }
        }
    }
}
