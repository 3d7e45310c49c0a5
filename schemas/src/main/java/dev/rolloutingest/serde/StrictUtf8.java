package dev.rolloutingest.serde;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** The check that bytes are well-formed UTF-8: ASCII passes without a decoder, anything else through a strict one. */
public final class StrictUtf8 {
    private StrictUtf8() {}

    /** @throws CharacterCodingException where {@code b[from, from + length)} is not UTF-8 */
    public static void check(byte[] b, int from, int length) throws CharacterCodingException {
        for (int i = from, end = from + length; i < end; i++) {
            if (b[i] < 0) {
                StandardCharsets.UTF_8
                        .newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(b, from, length));
                return;
            }
        }
    }
}
