package dev.rolloutingest.serde.values;

import java.util.Base64;

/**
 * The base64 text of a JSON string decoded from its UTF-8 bytes by the JDK's basic decoder: the standard alphabet,
 * padding optional but completing the last unit of four when present. Anything else (an escape, a space, another
 * character, a length the JDK refuses) is not decoded here: the caller leaves such a string to the JSON parser's
 * decoder, which has the final word. One per scanning thread: it keeps scratch arrays.
 *
 * <p>The JDK's decoder, not a loop of our own: the JIT replaces its block loop with vector code where the CPU has it
 * (an AVX-512 server decodes a 1,368-character payload in ~40 ns, a table loop takes ~770 ns). It takes a whole
 * array, so the text is copied into one of its exact length first.
 */
final class Base64Text {
    private static final Base64.Decoder DECODER = Base64.getDecoder();

    /** The last string's text, copied: its length is also the guess at the next string's. */
    private byte[] text = new byte[0];

    private byte[] decoded = new byte[4096];
    private int count;

    /**
     * Decodes the string whose text starts at {@code json[from]} (after its opening quote): the index of its closing
     * quote, its bytes then {@link #decoded()}{@code [0, }{@link #count()}{@code )}; -1 for a string left to the
     * parser.
     */
    int decode(byte[] json, int from, int end) {
        // Producers write payloads of one size: where the last string's length puts a quote, a decode that succeeds
        // proves the text before it has no quote (every character is in the alphabet), so no scan for it is needed.
        int close = from + text.length;
        if (close >= end || json[close] != '"' || !decodeText(json, from, close)) {
            close = close(json, from, end);
            if (close < 0 || close - from == text.length || !decodeText(json, from, close)) {
                return -1; // the same length was just refused: no second try
            }
        }
        return close;
    }

    byte[] decoded() {
        return decoded;
    }

    int count() {
        return count;
    }

    private boolean decodeText(byte[] json, int from, int close) {
        int chars = close - from;
        if (text.length != chars) {
            text = new byte[chars];
        }
        System.arraycopy(json, from, text, 0, chars);
        int most = chars / 4 * 3 + 2;
        if (decoded.length < most) {
            decoded = new byte[Math.max(most, 2 * decoded.length)];
        }
        try {
            count = DECODER.decode(text, decoded);
            return true;
        } catch (IllegalArgumentException refused) { // a character outside the alphabet, a bad ending
            return false;
        }
    }

    /** The index of the closing quote of the string whose text starts at {@code from}; -1 at an escape or no end. */
    private static int close(byte[] json, int from, int end) {
        int close = from;
        while (close < end && json[close] != '"') {
            if (json[close] == '\\') {
                return -1;
            }
            close++;
        }
        return close == end ? -1 : close;
    }
}
