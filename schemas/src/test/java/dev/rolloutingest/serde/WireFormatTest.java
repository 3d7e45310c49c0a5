package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class WireFormatTest {
    @Test
    void frameIsMagicByteThenBigEndianIdThenBody() {
        byte[] framed = WireFormat.frame(0x01020304, new byte[] {0x7f});
        assertThat(HexFormat.of().formatHex(framed)).isEqualTo("00010203047f");
        assertThat(WireFormat.schemaId("t", framed)).isEqualTo(0x01020304);
    }

    @Test
    void wrongMagicByteIsATypedErrorNamingTheTopic() {
        assertThatThrownBy(() -> WireFormat.schemaId("rollouts", new byte[] {1, 0, 0, 0, 1, 2}))
                .isInstanceOf(SerdeException.InvalidWireFormat.class)
                .hasMessageContaining("rollouts")
                .hasMessageContaining("0x01")
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("bad-magic-byte");
    }

    @Test
    void fewerThanFiveBytesIsTruncated() {
        assertThatThrownBy(() -> WireFormat.schemaId("rollouts", new byte[] {0, 0, 1}))
                .isInstanceOf(SerdeException.InvalidWireFormat.class)
                .hasMessageContaining("3 bytes")
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("truncated");
    }
}
