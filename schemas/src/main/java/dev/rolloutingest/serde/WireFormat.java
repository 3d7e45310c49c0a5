package dev.rolloutingest.serde;

import java.nio.ByteBuffer;

/**
 * The Confluent Schema Registry wire format: magic byte 0x0, a 4-byte big-endian schema id, then the
 * Avro binary encoding of the datum. Kept separate so the framing has exactly one implementation.
 */
public final class WireFormat {
    public static final byte MAGIC_BYTE = 0x0;
    public static final int HEADER_LENGTH = 5;

    private WireFormat() {}

    public static byte[] frame(int schemaId, byte[] avroBody) {
        ByteBuffer out = ByteBuffer.allocate(HEADER_LENGTH + avroBody.length);
        out.put(MAGIC_BYTE).putInt(schemaId).put(avroBody);
        return out.array();
    }

    /** Reads the schema id; fails with a typed error naming the topic when the header is wrong. */
    public static int schemaId(String topic, byte[] bytes) {
        if (bytes.length < HEADER_LENGTH) {
            throw new SerdeException.InvalidWireFormat(
                    "truncated",
                    "Record on topic '" + topic + "' has " + bytes.length
                            + " bytes, fewer than the 5-byte Confluent wire-format header");
        }
        if (bytes[0] != MAGIC_BYTE) {
            throw new SerdeException.InvalidWireFormat(
                    "bad-magic-byte",
                    String.format(
                            "Record on topic '%s' starts with byte 0x%02x, expected magic byte 0x00 "
                                    + "(not Confluent wire format)",
                            topic, bytes[0] & 0xff));
        }
        return ByteBuffer.wrap(bytes, 1, 4).getInt();
    }
}
