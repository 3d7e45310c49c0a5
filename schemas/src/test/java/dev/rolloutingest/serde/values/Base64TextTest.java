package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The decoder against the JDK's, string after string through one instance, as a scanning thread uses it. */
class Base64TextTest {
    private final Base64Text base64 = new Base64Text();

    private static byte[] json(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    private byte[] decoded() {
        return Arrays.copyOf(base64.decoded(), base64.count());
    }

    @Test
    void stringsOfOneSizeAndOfMixedSizesDecodeAsTheJdkDecodes() {
        SplittableRandom random = new SplittableRandom(52);
        for (int i = 0; i < 2_000; i++) {
            int size = i < 1_000 ? 1_024 : random.nextInt(0, 3_000); // one producer's size, then any
            byte[] bytes = new byte[size];
            random.nextBytes(bytes);
            Base64.Encoder encoder = random.nextBoolean()
                    ? Base64.getEncoder()
                    : Base64.getEncoder().withoutPadding();
            String text = encoder.encodeToString(bytes);
            byte[] json = json(text + "\",\"next\":\"" + text.substring(0, Math.min(8, text.length())) + "\"}");
            assertThat(base64.decode(json, 0, json.length)).isEqualTo(text.length());
            assertThat(decoded()).isEqualTo(bytes);
        }
    }

    @Test
    void aQuoteWhereTheLastLengthEndsIsNotTakenForTheEndUnlessTheTextBeforeItDecodes() {
        byte[] first = json("QUJDREVG\"}"); // 8 characters: the guess for the next string
        assertThat(base64.decode(first, 0, first.length)).isEqualTo(8);
        // the next string is shorter, and another string's quote sits where 8 characters end
        byte[] shorter = json("QUI=\",\"a\"}");
        assertThat(shorter[8]).isEqualTo((byte) '"');
        assertThat(base64.decode(shorter, 0, shorter.length)).isEqualTo(4);
        assertThat(decoded()).isEqualTo(json("AB"));
        // and longer: the guess falls inside it
        byte[] longer = json("QUJDREVGR0g=\"}");
        assertThat(base64.decode(longer, 0, longer.length)).isEqualTo(12);
        assertThat(decoded()).isEqualTo(json("ABCDEFGH"));
    }

    @Test
    void whatTheJdkRefusesIsLeftToTheParser() {
        for (String text : new String[] {
            "QUJD\\u0042\"", // an escape
            "QUJ D\"", // a space
            "QQ=\"", // padding that does not complete its unit
            "Q\"", // a unit of one character
            "QQ==QQ==\"", // text after the padding
            "QUJD-_\"", // the URL alphabet
            "QUJD", // no closing quote
        }) {
            byte[] json = json(text);
            assertThat(base64.decode(json, 0, json.length)).as(text).isEqualTo(-1);
            // refused at the guessed length as well as after a scan
            assertThat(base64.decode(json, 0, json.length)).as(text).isEqualTo(-1);
        }
        byte[] padded = json("QUI=\"");
        assertThat(base64.decode(padded, 0, padded.length)).isEqualTo(4);
        assertThat(decoded()).isEqualTo(json("AB"));
        byte[] empty = json("\"");
        assertThat(base64.decode(empty, 0, empty.length)).isZero();
        assertThat(base64.count()).isZero();
    }
}
