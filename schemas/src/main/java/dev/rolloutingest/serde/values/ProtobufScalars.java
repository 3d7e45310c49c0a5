package dev.rolloutingest.serde.values;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import dev.rolloutingest.serde.StrictUtf8;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;

/**
 * One scalar off the wire as its field's declared type reads it (zig-zag, fixed, unsigned), and the UTF-8 check of a
 * string's bytes, which the scan leaves in the message's buffer rather than decoding.
 */
final class ProtobufScalars {
    private ProtobufScalars() {}

    /** An integer-typed (or bool, enum) value; an unsigned 64-bit one above 2^63 - 1 comes negative. */
    static long integer(FieldDescriptor fd, CodedInputStream in) throws IOException {
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

    /** A float, double or integer-typed value as a double (an unsigned 64-bit one by its unsigned value). */
    static double number(FieldDescriptor fd, CodedInputStream in) throws IOException {
        return switch (fd.getType()) {
            case FLOAT -> in.readFloat();
            case DOUBLE -> in.readDouble();
            default -> {
                long v = integer(fd, in);
                yield v < 0 && unsigned64(fd) ? Double.parseDouble(Long.toUnsignedString(v)) : v;
            }
        };
    }

    /** Wrong-type naming {@code name} when the bytes are not UTF-8; ASCII passes without a decoder. */
    static void requireUtf8(byte[] b, int from, int length, String name) {
        try {
            StrictUtf8.check(b, from, length);
        } catch (CharacterCodingException e) {
            throw ValueErrors.wrongType(name, "UTF-8 text", "bytes that are not UTF-8");
        }
    }
}
