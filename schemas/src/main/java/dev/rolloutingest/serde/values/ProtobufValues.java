package dev.rolloutingest.serde.values;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import dev.rolloutingest.serde.ConfluentAvroDeserializer.UnknownFieldsListener;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A Protobuf message mapped to the contract by field name and written to an {@link AvroTape}. The wire is read by
 * protobuf-java's {@link CodedInputStream} in one pass: the contract's fields straight into the tape's values (no
 * message objects), the fields the message adds collected as their wire bytes and parsed by {@link DynamicMessage}
 * ({@link ProtobufAddedValues}). As Protobuf reads a message: a field number the schema lacks (a producer's newer
 * schema) is skipped and told to the listener, groups included; of a oneof's members the last on the wire wins; a
 * scalar seen twice keeps its last value, a message seen twice is merged, a repeated field's values are
 * concatenated (packed or not), a map key seen twice keeps its last value. A field of the schema whose value comes
 * with another wire type fails the record ({@code not-protobuf}): the bytes are not this message.
 *
 * <p>What each contract field takes, checked once per schema ({@link ProtobufPlan}):
 * <ul>
 *   <li>strings: {@code string}; int and long fields: any integer type (values that do not fit are {@code
 *       wrong-type}); floats: {@code float} or {@code double}; include_in_training: {@code bool}; binary_payload:
 *       {@code bytes}; the token lists: {@code repeated} integers (packed or not); output_logprobs: {@code repeated}
 *       float or double; metadata: {@code map<string, string>};
 *   <li>created_at: {@code google.protobuf.Timestamp} (nanoseconds cut to microseconds), an integer of epoch
 *       milliseconds, or an ISO-8601 string;
 *   <li>a field that has presence ({@code optional}, a message, a oneof's member) and is absent is null or the
 *       contract's default; a proto3 field without presence that is absent holds Protobuf's default (0, "", false,
 *       empty), as the producer meant; a required contract field the message does not declare, or a created_at left
 *       unset, is {@code missing-field}.
 * </ul>
 *
 * <p>One per thread: it keeps the read's state. Plans are shared.
 */
final class ProtobufValues {
    private static final int CONTRACT = ProtobufPlan.CONTRACT;
    /** google.protobuf.Timestamp's seconds (1) and nanos (2), varints. */
    private static final int SECONDS_TAG = 1 << 3 | WireFormat.WIRETYPE_VARINT;

    private static final int NANOS_TAG = 2 << 3 | WireFormat.WIRETYPE_VARINT;

    private final AddedFields addedFields;
    private final UnknownFieldsListener unknownFields;

    // ---- the read's state, reset per message ----
    private int sequence;
    /** Per slot, the sequence number of its last occurrence (0: absent). */
    private int[] lastSeen = new int[64];
    /** Per oneof, the slot of its member seen last (-1: none): the one that holds a value. */
    private int[] oneofWinner = new int[8];
    /** Per contract field: its last integer value, its last number, or the range of its bytes. */
    private final long[] integers = new long[CONTRACT];

    private final double[] numbers = new double[CONTRACT];
    private final int[] from = new int[CONTRACT];
    private final int[] to = new int[CONTRACT];
    private final int[][] ints = new int[CONTRACT][];
    private final float[][] floats = new float[CONTRACT][];
    private final int[] counts = new int[CONTRACT];
    /** The metadata's entries: key from, key to, value from, value to. */
    private int[] entries = new int[64];

    private int entryCount;
    private long seconds;
    private long nanos;
    /** The added fields' occurrences, tag and value, as on the wire. */
    private byte[] added = new byte[256];

    private int addedLength;
    /** The numbers of the fields skipped, each once. */
    private final Set<Integer> unknown = new LinkedHashSet<>();

    ProtobufValues(AddedFields addedFields, UnknownFieldsListener unknownFields) {
        this.addedFields = addedFields;
        this.unknownFields = unknownFields;
        for (ContractField field : ContractField.ALL) {
            if (field.kind == ContractField.Kind.INT_ARRAY) {
                ints[field.ordinal()] = new int[64];
            } else if (field.kind == ContractField.Kind.FLOAT_ARRAY) {
                floats[field.ordinal()] = new float[64];
            }
        }
    }

    /** Writes the row of the message in {@code bytes[offset, end)} to {@code tape}. */
    void read(ProtobufPlan plan, byte[] bytes, int offset, int end, AvroTape tape) {
        if (plan.schemaError != null) {
            throw plan.schemaError;
        }
        tape.reset();
        reset(plan);
        try {
            scan(plan, bytes, offset, end);
            for (ContractField field : ContractField.ALL) {
                contract(plan, field, bytes, tape);
            }
            if (!plan.addedNames.isEmpty()) {
                if (addedFields.keep()) {
                    added(plan, tape);
                } else {
                    addedFields.dropped(plan.schemaId, plan.addedNames);
                }
            }
        } catch (IOException | IndexOutOfBoundsException | IllegalArgumentException e) {
            throw ValueErrors.of(
                    ValueErrors.NOT_PROTOBUF,
                    "the value is truncated or not a Protobuf " + plan.message.getFullName() + " (schema id "
                            + plan.schemaId + "): " + e.getMessage(),
                    e);
        }
        if (!unknown.isEmpty()) {
            List<String> numbers = new ArrayList<>(unknown.size());
            unknown.forEach(n -> numbers.add(Integer.toString(n)));
            unknownFields.dropped(plan.schemaId, numbers);
        }
    }

    private void reset(ProtobufPlan plan) {
        sequence = 0;
        if (lastSeen.length < plan.slots.length) {
            lastSeen = new int[plan.slots.length];
        } else {
            Arrays.fill(lastSeen, 0, plan.slots.length, 0);
        }
        if (oneofWinner.length < plan.oneofCount) {
            oneofWinner = new int[plan.oneofCount];
        }
        Arrays.fill(oneofWinner, 0, plan.oneofCount, -1);
        Arrays.fill(counts, 0);
        entryCount = 0;
        seconds = 0;
        nanos = 0;
        addedLength = 0;
        unknown.clear();
    }

    /** The one pass over the wire: contract values kept, added fields' bytes collected, unknown fields skipped. */
    private void scan(ProtobufPlan plan, byte[] b, int offset, int end) throws IOException {
        CodedInputStream in = CodedInputStream.newInstance(b, offset, end - offset);
        while (true) {
            int tagStart = offset + in.getTotalBytesRead();
            int tag;
            try {
                tag = in.readTag();
            } catch (InvalidProtocolBufferException e) {
                throw new InvalidProtocolBufferException(e.getMessage() + " (at byte " + (tagStart - offset) + ")");
            }
            if (tag == 0) {
                return;
            }
            int number = WireFormat.getTagFieldNumber(tag);
            int wireType = WireFormat.getTagWireType(tag);
            int slot = plan.slot(number);
            if (slot < 0) {
                if (!in.skipField(tag)) {
                    throw new InvalidProtocolBufferException(
                            "an end-group tag of field " + number + " without its start-group tag");
                }
                unknown.add(number);
                continue;
            }
            FieldDescriptor fd = plan.slots[slot];
            boolean packed = wireType == WireFormat.WIRETYPE_LENGTH_DELIMITED && plan.packable[slot];
            if (wireType != plan.wireTypes[slot] && !packed) {
                throw ValueErrors.of(
                        ValueErrors.NOT_PROTOBUF,
                        "field " + fd.getName() + " has wire type " + wireType + ", its type in the schema needs "
                                + plan.wireTypes[slot]);
            }
            lastSeen[slot] = ++sequence;
            int oneof = plan.oneofs[slot];
            if (oneof >= 0 && oneofWinner[oneof] != slot) {
                // another member set clears the one before: a Timestamp seen again starts afresh
                if (slot == ContractField.CREATED_AT.ordinal()) {
                    seconds = 0;
                    nanos = 0;
                }
                oneofWinner[oneof] = slot;
            }
            if (slot < CONTRACT) {
                contractValue(ContractField.ALL[slot], fd, packed, in, b, offset);
            } else {
                if (fd.getType() == FieldDescriptor.Type.STRING && !packed) {
                    int length = in.readRawVarint32();
                    int start = offset + in.getTotalBytesRead();
                    in.skipRawBytes(length);
                    requireUtf8(b, start, length, fd.getName());
                } else if (!in.skipField(tag)) {
                    throw new InvalidProtocolBufferException("an end-group tag of field " + number + " out of place");
                }
                if (addedFields.keep()) {
                    append(b, tagStart, offset + in.getTotalBytesRead());
                }
            }
        }
    }

    // ---- the contract's fields: kept while scanning ----

    private void contractValue(
            ContractField field, FieldDescriptor fd, boolean packed, CodedInputStream in, byte[] b, int offset)
            throws IOException {
        int o = field.ordinal();
        switch (field.kind) {
            case STRING, NULLABLE_STRING, NULLABLE_BYTES -> {
                int length = in.readRawVarint32();
                from[o] = offset + in.getTotalBytesRead();
                to[o] = from[o] + length;
                in.skipRawBytes(length);
                if (field.kind != ContractField.Kind.NULLABLE_BYTES) {
                    requireUtf8(b, from[o], length, field.fieldName);
                }
            }
            case INT, NULLABLE_LONG, BOOLEAN -> integers[o] = integer(fd, in);
            case NULLABLE_FLOAT -> numbers[o] = number(fd, in);
            case TIMESTAMP -> {
                if (fd.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                    timestamp(in);
                } else if (fd.getJavaType() == FieldDescriptor.JavaType.STRING) {
                    int length = in.readRawVarint32();
                    from[o] = offset + in.getTotalBytesRead();
                    to[o] = from[o] + length;
                    in.skipRawBytes(length);
                } else {
                    integers[o] = integer(fd, in);
                }
            }
            case INT_ARRAY -> {
                int limit = packed ? in.pushLimit(in.readRawVarint32()) : -1;
                do {
                    int v = WholeNumbers.toInt(field.fieldName, counts[o], integer(fd, in), unsigned64(fd));
                    if (counts[o] == ints[o].length) {
                        ints[o] = Arrays.copyOf(ints[o], counts[o] * 2);
                    }
                    ints[o][counts[o]++] = v;
                } while (packed && in.getBytesUntilLimit() > 0);
                if (packed) {
                    in.popLimit(limit);
                }
            }
            case FLOAT_ARRAY -> {
                int limit = packed ? in.pushLimit(in.readRawVarint32()) : -1;
                do {
                    float v = (float) number(fd, in);
                    if (counts[o] == floats[o].length) {
                        floats[o] = Arrays.copyOf(floats[o], counts[o] * 2);
                    }
                    floats[o][counts[o]++] = v;
                } while (packed && in.getBytesUntilLimit() > 0);
                if (packed) {
                    in.popLimit(limit);
                }
            }
            case STRING_MAP -> entry(field.fieldName, in, b, offset);
        }
    }

    /** A Timestamp message's fields, merged into those of its earlier occurrences (Protobuf's merge). */
    private void timestamp(CodedInputStream in) throws IOException {
        int limit = in.pushLimit(in.readRawVarint32());
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            if (tag == SECONDS_TAG) {
                seconds = in.readInt64();
            } else if (tag == NANOS_TAG) {
                nanos = in.readInt32();
            } else if (!in.skipField(tag)) {
                throw new InvalidProtocolBufferException("an end-group tag in google.protobuf.Timestamp");
            }
        }
        in.popLimit(limit);
    }

    /** One map entry of the metadata: its key (1) and value (2), each "" when absent, each last one kept. */
    private void entry(String name, CodedInputStream in, byte[] b, int offset) throws IOException {
        int limit = in.pushLimit(in.readRawVarint32());
        int keyFrom = 0;
        int keyTo = 0;
        int valueFrom = 0;
        int valueTo = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            int number = WireFormat.getTagFieldNumber(tag);
            int wireType = WireFormat.getTagWireType(tag);
            if ((number == 1 || number == 2) && wireType == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                int length = in.readRawVarint32();
                int start = offset + in.getTotalBytesRead();
                in.skipRawBytes(length);
                requireUtf8(b, start, length, name);
                if (number == 1) {
                    keyFrom = start;
                    keyTo = start + length;
                } else {
                    valueFrom = start;
                    valueTo = start + length;
                }
            } else if (number == 1 || number == 2) {
                throw ValueErrors.wrongType(name, "map<string, string> entries", "wire type " + wireType);
            } else if (!in.skipField(tag)) {
                throw new InvalidProtocolBufferException("an end-group tag in a map entry");
            }
        }
        in.popLimit(limit);
        if (entryCount * 4 == entries.length) {
            entries = Arrays.copyOf(entries, entries.length * 2);
        }
        int e = entryCount++ * 4;
        entries[e] = keyFrom;
        entries[e + 1] = keyTo;
        entries[e + 2] = valueFrom;
        entries[e + 3] = valueTo;
    }

    private void append(byte[] b, int start, int end) {
        int length = end - start;
        if (addedLength + length > added.length) {
            added = Arrays.copyOf(added, Math.max(addedLength + length, added.length * 2));
        }
        System.arraycopy(b, start, added, addedLength, length);
        addedLength += length;
    }

    /** Present: seen, and not followed by another member of its oneof. */
    private boolean present(ProtobufPlan plan, int slot) {
        int oneof = plan.oneofs[slot];
        return lastSeen[slot] > 0 && (oneof < 0 || oneofWinner[oneof] == slot);
    }

    // ---- the contract's fields: written ----

    private void contract(ProtobufPlan plan, ContractField field, byte[] b, AvroTape tape) {
        int o = field.ordinal();
        FieldDescriptor fd = plan.slots[o];
        if (fd == null) {
            field.writeAbsent(
                    "not in message " + plan.message.getFullName() + " of Protobuf schema id " + plan.schemaId, tape);
            return;
        }
        boolean present = present(plan, o);
        if (!present && (fd.hasPresence() || field.kind == ContractField.Kind.TIMESTAMP)) {
            field.writeAbsent("unset", tape);
            return;
        }
        tape.field(field.field);
        String name = field.fieldName;
        switch (field.kind) {
            case STRING -> string(present, o, b, tape);
            case NULLABLE_STRING -> {
                tape.writeIndex(1);
                string(present, o, b, tape);
            }
            case INT -> {
                tape.writeInt(WholeNumbers.toInt(name, present ? integers[o] : 0, unsigned64(fd)));
            }
            case NULLABLE_LONG -> {
                long v = WholeNumbers.toLong(name, present ? integers[o] : 0, unsigned64(fd));
                tape.writeIndex(1);
                tape.writeLong(v);
            }
            case NULLABLE_FLOAT -> {
                tape.writeIndex(1);
                tape.writeFloat(present ? (float) numbers[o] : 0f);
            }
            case BOOLEAN -> tape.writeBoolean(present && integers[o] != 0);
            case NULLABLE_BYTES -> {
                tape.writeIndex(1);
                string(present, o, b, tape);
            }
            case TIMESTAMP -> tape.writeLong(timestampMicros(fd, o, b, name));
            case INT_ARRAY -> {
                tape.writeIntArray(ints[o], counts[o]);
            }
            case FLOAT_ARRAY -> {
                tape.writeFloatArray(floats[o], counts[o]);
            }
            case STRING_MAP -> stringMap(b, tape);
        }
    }

    private void string(boolean present, int o, byte[] b, AvroTape tape) {
        if (!present) {
            tape.writeLong(0);
        } else {
            tape.writeBytes(b, from[o], to[o] - from[o]);
        }
    }

    private long timestampMicros(FieldDescriptor fd, int o, byte[] b, String name) {
        switch (fd.getJavaType()) {
            case MESSAGE -> {
                try {
                    return CreatedAt.ofSeconds(seconds, nanos);
                } catch (ArithmeticException e) {
                    throw ValueErrors.wrongType(name, "a timestamp within 64-bit microseconds", seconds + " s");
                }
            }
            case STRING -> {
                String text = new String(b, from[o], to[o] - from[o], StandardCharsets.UTF_8);
                try {
                    return CreatedAt.ofIso(text);
                } catch (RuntimeException e) {
                    throw ValueErrors.wrongType(name, "an ISO-8601 date-time", "'" + text + "'");
                }
            }
            default -> {
                long millis = WholeNumbers.toLong(name, integers[o], unsigned64(fd));
                try {
                    return CreatedAt.ofMillis(millis);
                } catch (ArithmeticException e) {
                    throw ValueErrors.wrongType(name, "epoch milliseconds within 64-bit microseconds", "" + millis);
                }
            }
        }
    }

    /** The metadata's entries, a key's last value only (a map's rule), in the order their last values came. */
    private void stringMap(byte[] b, AvroTape tape) {
        int kept = 0;
        boolean[] superseded = entryCount > 1 ? new boolean[entryCount] : null;
        for (int i = 0; i < entryCount; i++) {
            if (superseded != null) {
                for (int j = i + 1; j < entryCount; j++) {
                    if (sameKey(b, i, j)) {
                        superseded[i] = true;
                        break;
                    }
                }
            }
            if (superseded == null || !superseded[i]) {
                kept++;
            }
        }
        if (kept > 0) {
            tape.writeLong(kept);
            for (int i = 0; i < entryCount; i++) {
                if (superseded == null || !superseded[i]) {
                    int e = i * 4;
                    tape.writeBytes(b, entries[e], entries[e + 1] - entries[e]);
                    tape.writeBytes(b, entries[e + 2], entries[e + 3] - entries[e + 2]);
                }
            }
        }
        tape.writeLong(0);
    }

    private boolean sameKey(byte[] b, int i, int j) {
        return Arrays.equals(b, entries[i * 4], entries[i * 4 + 1], b, entries[j * 4], entries[j * 4 + 1]);
    }

    // ---- added fields ----

    private void added(ProtobufPlan plan, AvroTape tape) throws IOException {
        // partial: the contract's required fields are not in these bytes (and are checked as the contract's)
        DynamicMessage message = addedLength == 0
                ? DynamicMessage.getDefaultInstance(plan.message)
                : DynamicMessage.newBuilder(plan.message)
                        .mergeFrom(CodedInputStream.newInstance(added, 0, addedLength))
                        .buildPartial();
        for (int i = 0; i < plan.addedNames.size(); i++) {
            int slot = CONTRACT + i;
            FieldDescriptor fd = plan.slots[slot];
            boolean present = present(plan, slot);
            if (!present && fd.hasPresence()) {
                continue; // absent: null in the row
            }
            tape.field(plan.addedReaderFields[i]);
            ProtobufAddedValues.write(fd, message, present, tape);
        }
    }

    // ---- scalars off the wire ----

    /** An integer-typed (or bool, enum) value; an unsigned 64-bit one above 2^63 - 1 comes negative. */
    private static long integer(FieldDescriptor fd, CodedInputStream in) throws IOException {
        return switch (fd.getType()) {
            case SINT32 -> in.readSInt32();
            case SINT64 -> in.readSInt64();
            case UINT32 -> in.readUInt32() & 0xFFFFFFFFL;
            case UINT64 -> in.readUInt64();
            case INT32 -> in.readInt32();
            case ENUM -> in.readEnum();
            case FIXED32 -> in.readFixed32() & 0xFFFFFFFFL;
            case SFIXED32 -> in.readSFixed32();
            case FIXED64 -> in.readFixed64();
            case SFIXED64 -> in.readSFixed64();
            case BOOL -> in.readBool() ? 1 : 0;
            default -> in.readInt64();
        };
    }

    /** Whether the field's values are unsigned 64-bit: read into a long, those above 2^63 - 1 come negative. */
    static boolean unsigned64(FieldDescriptor fd) {
        return fd.getType() == FieldDescriptor.Type.UINT64 || fd.getType() == FieldDescriptor.Type.FIXED64;
    }

    private static double number(FieldDescriptor fd, CodedInputStream in) throws IOException {
        return switch (fd.getType()) {
            case FLOAT -> in.readFloat();
            case DOUBLE -> in.readDouble();
            default -> {
                long v = integer(fd, in);
                yield v < 0 && unsigned64(fd) ? Double.parseDouble(Long.toUnsignedString(v)) : v;
            }
        };
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
