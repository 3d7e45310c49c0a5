package dev.rolloutingest.serde.values;

import java.util.Arrays;

/**
 * The base64 text of a JSON string decoded from its UTF-8 bytes, with no text copied: the standard alphabet, padding
 * optional but completing the last unit of four when present (what the JDK's basic decoder takes). Anything else
 * (an escape, a space, another character, a length the JDK refuses) is not decoded here: the caller leaves such a
 * string to the JSON parser's decoder, which has the final word.
 */
final class Base64Text {
    /** Each byte's value in the standard base64 alphabet, -1 for every other byte. */
    private static final int[] VALUES = new int[256];

    static {
        Arrays.fill(VALUES, -1);
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < alphabet.length(); i++) {
            VALUES[alphabet.charAt(i)] = i;
        }
    }

    private Base64Text() {}

    /** The index of the closing quote of the string whose text starts at {@code from}; -1 at an escape or no end. */
    static int close(byte[] json, int from, int end) {
        int close = from;
        while (close < end && json[close] != '"') {
            if (json[close] == '\\') {
                return -1;
            }
            close++;
        }
        return close == end ? -1 : close;
    }

    /** How many bytes {@code json[from, close)} decodes to; -1 for a length or padding left to the parser. */
    static int decodedLength(byte[] json, int from, int close) {
        int chars = close - from;
        int padding = chars > 0 && json[close - 1] == '=' ? (chars > 1 && json[close - 2] == '=' ? 2 : 1) : 0;
        int data = chars - padding;
        int rest = data % 4;
        if (rest == 1 || padding > 0 && chars % 4 != 0) {
            return -1;
        }
        return data / 4 * 3 + (rest == 0 ? 0 : rest - 1);
    }

    /**
     * Decodes {@code json[from, close)}, of {@link #decodedLength} {@code count}, into {@code out} at {@code offset};
     * false at a character outside the alphabet ({@code out} then holds part of it).
     */
    static boolean decode(byte[] json, int from, int count, byte[] out, int offset) {
        int rest = count % 3 == 0 ? 0 : count % 3 + 1; // characters of the last, partial unit
        int in = from;
        int o = offset;
        for (int full = from + count / 3 * 4; in < full; in += 4) {
            int bits = VALUES[json[in] & 0xFF] << 18
                    | VALUES[json[in + 1] & 0xFF] << 12
                    | VALUES[json[in + 2] & 0xFF] << 6
                    | VALUES[json[in + 3] & 0xFF];
            if (bits < 0) { // an invalid character's -1 sets the sign bit
                return false;
            }
            out[o++] = (byte) (bits >> 16);
            out[o++] = (byte) (bits >> 8);
            out[o++] = (byte) bits;
        }
        if (rest > 0) {
            int bits = VALUES[json[in] & 0xFF] << 18
                    | VALUES[json[in + 1] & 0xFF] << 12
                    | (rest == 3 ? VALUES[json[in + 2] & 0xFF] << 6 : 0);
            if (bits < 0) {
                return false;
            }
            out[o++] = (byte) (bits >> 16);
            if (rest == 3) {
                out[o] = (byte) (bits >> 8);
            }
        }
        return true;
    }
}
