package dev.rolloutingest.serde.values;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import java.io.IOException;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * The one pass over a message's wire, protobuf-java's {@link CodedInputStream} and no message objects: each contract
 * field's last value kept as a number or as the range of its bytes, the added fields' occurrences copied as they came
 * (for {@link ProtobufValues} to parse), the field numbers the schema lacks skipped and collected. Occurrences follow
 * Protobuf's rules: of a oneof's members the last wins, a Timestamp seen twice is merged, a repeated field's values
 * are concatenated (packed or not). One per thread: the state of one message, reset by each scan;
 * {@link ProtobufContractValues} writes the contract's fields from it.
 */
final class ProtobufScan {
    private static final int CONTRACT = ProtobufPlan.CONTRACT;
    /** google.protobuf.Timestamp's seconds (1) and nanos (2), varints. */
    private static final int SECONDS_TAG = 1 << 3 | WireFormat.WIRETYPE_VARINT;

    private static final int NANOS_TAG = 2 << 3 | WireFormat.WIRETYPE_VARINT;

    private final boolean keepAdded;
    private int sequence;
    /** Per slot, the sequence number of its last occurrence (0: absent). */
    private int[] lastSeen = new int[64];
    /** Per oneof, the slot of its member seen last (-1: none): the one that holds a value. */
    private int[] oneofWinner = new int[8];
    /** Per contract field: its last integer value, its last number, or the range of its bytes. */
    final long[] integers = new long[CONTRACT];

    final double[] numbers = new double[CONTRACT];
    final int[] from = new int[CONTRACT];
    final int[] to = new int[CONTRACT];
    /** Per array field, its values so far ({@link #counts} of them). */
    final int[][] ints = new int[CONTRACT][];

    final float[][] floats = new float[CONTRACT][];
    final int[] counts = new int[CONTRACT];
    final ProtobufMetadata metadata = new ProtobufMetadata();
    private long seconds;
    private long nanos;
    /** The added fields' occurrences, tag and value, as on the wire. */
    private byte[] added = new byte[256];

    private int addedLength;
    /** The numbers of the fields skipped, each once. */
    private final Set<Integer> unknown = new LinkedHashSet<>();

    /** @param keepAdded whether the added fields' bytes are kept (else only checked and skipped) */
    ProtobufScan(boolean keepAdded) {
        this.keepAdded = keepAdded;
        for (ContractField field : ContractField.ALL) {
            if (field.kind == ContractField.Kind.INT_ARRAY) {
                ints[field.ordinal()] = new int[64];
            } else if (field.kind == ContractField.Kind.FLOAT_ARRAY) {
                floats[field.ordinal()] = new float[64];
            }
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
        metadata.reset();
        seconds = 0;
        nanos = 0;
        addedLength = 0;
        unknown.clear();
    }

    /** The one pass over the wire: contract values kept, added fields' bytes collected, unknown fields skipped. */
    void scan(ProtobufPlan plan, byte[] b, int offset, int end) throws IOException {
        reset(plan);
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
                    ProtobufScalars.requireUtf8(b, start, length, fd.getName());
                } else if (!in.skipField(tag)) {
                    throw new InvalidProtocolBufferException("an end-group tag of field " + number + " out of place");
                }
                if (keepAdded) {
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
                    ProtobufScalars.requireUtf8(b, from[o], length, field.fieldName);
                }
            }
            case INT, NULLABLE_LONG, BOOLEAN -> integers[o] = ProtobufScalars.integer(fd, in);
            case NULLABLE_FLOAT -> numbers[o] = ProtobufScalars.number(fd, in);
            case TIMESTAMP -> {
                if (fd.getJavaType() == FieldDescriptor.JavaType.MESSAGE) {
                    timestamp(in);
                } else if (fd.getJavaType() == FieldDescriptor.JavaType.STRING) {
                    int length = in.readRawVarint32();
                    from[o] = offset + in.getTotalBytesRead();
                    to[o] = from[o] + length;
                    in.skipRawBytes(length);
                } else {
                    integers[o] = ProtobufScalars.integer(fd, in);
                }
            }
            case INT_ARRAY -> {
                int limit = packed ? in.pushLimit(in.readRawVarint32()) : -1;
                do {
                    int v = WholeNumbers.toInt(
                            field.fieldName,
                            counts[o],
                            ProtobufScalars.integer(fd, in),
                            ProtobufScalars.unsigned64(fd));
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
                    float v = (float) ProtobufScalars.number(fd, in);
                    if (counts[o] == floats[o].length) {
                        floats[o] = Arrays.copyOf(floats[o], counts[o] * 2);
                    }
                    floats[o][counts[o]++] = v;
                } while (packed && in.getBytesUntilLimit() > 0);
                if (packed) {
                    in.popLimit(limit);
                }
            }
            case STRING_MAP -> metadata.read(field.fieldName, in, b, offset);
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

    private void append(byte[] b, int start, int end) {
        int length = end - start;
        if (addedLength + length > added.length) {
            added = Arrays.copyOf(added, Math.max(addedLength + length, added.length * 2));
        }
        System.arraycopy(b, start, added, addedLength, length);
        addedLength += length;
    }

    /** Present: seen, and not followed by another member of its oneof. */
    boolean present(ProtobufPlan plan, int slot) {
        int oneof = plan.oneofs[slot];
        return lastSeen[slot] > 0 && (oneof < 0 || oneofWinner[oneof] == slot);
    }

    /** The last created_at Timestamp's seconds and nanos, merged over its occurrences. */
    long seconds() {
        return seconds;
    }

    long nanos() {
        return nanos;
    }

    /** The added fields' occurrences as on the wire: {@code added()[0, addedLength())}. */
    byte[] added() {
        return added;
    }

    int addedLength() {
        return addedLength;
    }

    /** The field numbers the schema lacks, each once, in the order first seen. */
    Set<Integer> unknown() {
        return unknown;
    }
}
