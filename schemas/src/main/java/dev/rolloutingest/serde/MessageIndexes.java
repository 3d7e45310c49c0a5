package dev.rolloutingest.serde;

import java.util.Arrays;

/**
 * Confluent's Protobuf framing after the 5-byte header: the message indexes naming which message of the schema a
 * value is (a zig-zag varint count, then as many zig-zag varint indexes, each into the messages of the one before;
 * a count of 0, the single byte 0, means the first message), then the message. One per thread, reused.
 */
public final class MessageIndexes {
    /** Deeper than any schema nests its messages (protobuf-java reads no deeper than 100). */
    private static final int MAX_COUNT = 100;

    private int[] indexes = new int[4];
    private int count;
    private int messageStart;

    /** Reads the indexes of a framed value; not-protobuf when they are not Confluent's framing. */
    public void read(int schemaId, byte[] bytes) {
        int[] position = {WireFormat.HEADER_LENGTH};
        long n = zigzag(varint(schemaId, bytes, position));
        if (n < 0 || n > MAX_COUNT) {
            throw notFramed("the message indexes after schema id " + schemaId + " count " + n
                    + ": not Confluent's Protobuf framing");
        }
        count = (int) n;
        if (indexes.length < count) {
            indexes = new int[count];
        }
        for (int i = 0; i < count; i++) {
            long index = zigzag(varint(schemaId, bytes, position));
            if (index < 0 || index > Integer.MAX_VALUE) {
                throw notFramed("message index " + index + " after schema id " + schemaId + " names no message");
            }
            indexes[i] = (int) index;
        }
        messageStart = position[0];
    }

    /** The schema's first message: no index, or the single index 0. */
    public boolean firstMessage() {
        return count == 0 || count == 1 && indexes[0] == 0;
    }

    public int[] indexes() {
        return Arrays.copyOf(indexes, count);
    }

    /** Where the message starts in the bytes read. */
    public int messageStart() {
        return messageStart;
    }

    private static long varint(int schemaId, byte[] bytes, int[] position) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (position[0] >= bytes.length) {
                throw notFramed("the value ends within its message indexes (schema id " + schemaId + ")");
            }
            byte b = bytes[position[0]++];
            value |= (long) (b & 0x7f) << shift;
            if (b >= 0) {
                return value;
            }
        }
        throw notFramed("a message index longer than 10 bytes (schema id " + schemaId + ")");
    }

    private static long zigzag(long n) {
        return (n >>> 1) ^ -(n & 1);
    }

    private static SerdeException notFramed(String message) {
        return new SerdeException(ProtoSchemas.NOT_PROTOBUF, message, null);
    }
}
