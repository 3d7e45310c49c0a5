package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.serde.values.RolloutValues;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Protobuf keys read through their schema's descriptors and the message their indexes name, in both forms a schema
 * is registered in; a key's schema parsed once per schema id.
 */
class RecordKeysTest {
    private final StubRegistry registry = new StubRegistry();

    @AfterEach
    void stop() {
        registry.close();
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.writeBytes(part);
        }
        return out.toByteArray();
    }

    private static byte[] string(int field, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        return concat(new byte[] {(byte) (field << 3 | 2), (byte) bytes.length}, bytes);
    }

    private static final String TWO_MESSAGES = "syntax = \"proto3\";\npackage keys;\n"
            + "message Other { string record_id = 1; }\n"
            + "message Key { int64 step = 1; string record_id = 2; }\n";

    @Test
    void aPlainKeyIsItsUtf8TextAndBytesThatAreNotUtf8AreRefused() {
        RecordKeys keys = new RecordKeys(registry.client(100), 100);
        assertThat(keys.recordId("t", "rollout-7".getBytes(StandardCharsets.UTF_8)))
                .isEqualTo("rollout-7");
        assertThat(keys.recordId("t", "rollout-\u0436-\uD83D\uDE00".getBytes(StandardCharsets.UTF_8)))
                .isEqualTo("rollout-\u0436-\uD83D\uDE00");
        assertThatThrownBy(() -> keys.recordId("t", new byte[] {'k', (byte) 0xC3, '(', '1'}))
                .isInstanceOf(RecordKeys.UnreadableKey.class)
                .hasMessageContaining("neither UTF-8 text nor Confluent wire format");
    }

    @Test
    void aProtobufKeysRecordIdIsTheFieldOfTheMessageItsIndexesName() {
        registry.schema(1, "PROTOBUF", TWO_MESSAGES);
        RecordKeys keys = new RecordKeys(registry.client(100), 100);
        byte[] indexesOfKey = {2, 2}; // one index, 1 (zig-zag)
        byte[] message = concat(new byte[] {0x08, 0x05}, string(2, "k-1"));
        assertThat(keys.recordId("t", WireFormat.frame(1, concat(indexesOfKey, message))))
                .isEqualTo("k-1");
        byte[] twice = concat(message, string(2, "k-2"), new byte[] {(byte) 0xc8, 0x01, 0x07}); // field 25 unknown
        assertThat(keys.recordId("t", WireFormat.frame(1, concat(indexesOfKey, twice))))
                .as("the last value wins; unknown fields are skipped")
                .isEqualTo("k-2");
        assertThat(keys.recordId("t", WireFormat.frame(1, concat(new byte[] {0}, string(1, "k-3")))))
                .as("index [0]: the first message")
                .isEqualTo("k-3");
    }

    @Test
    void aProtobufKeyWhoseSchemaIsABase64DescriptorIsRead() {
        String text = "syntax = \"proto3\";\nmessage Key { int64 step = 1; string record_id = 2; }\n";
        registry.schema(2, "PROTOBUF", RolloutValues.protoDescriptorBase64(text));
        RecordKeys keys = new RecordKeys(registry.client(100), 100);
        assertThat(keys.recordId("t", WireFormat.frame(2, concat(new byte[] {0}, string(2, "k-4")))))
                .isEqualTo("k-4");
    }

    @Test
    void aKeysSchemaIsFetchedAndParsedOncePerSchemaIdWithinTheBound() {
        registry.schema(3, null, "\"string\"")
                .schema(
                        4,
                        null,
                        "{\"type\":\"record\",\"name\":\"K\",\"fields\":[{\"name\":\"record_id\",\"type\":"
                                + "\"string\"}]}")
                .schema(5, "PROTOBUF", "message Key { string record_id = 1; }");
        // the registry client keeps one schema: the keys' readers are what is kept
        RecordKeys keys = new RecordKeys(registry.client(1), 2);
        byte[] avro = WireFormat.frame(3, new byte[] {6, 'k', '-', '5'});
        byte[] record = WireFormat.frame(4, new byte[] {6, 'k', '-', '6'});
        for (int i = 0; i < 20; i++) {
            assertThat(keys.recordId("t", i % 2 == 0 ? avro : record)).isEqualTo(i % 2 == 0 ? "k-5" : "k-6");
        }
        assertThat(registry.fetches()).isEqualTo(2);
        byte[] proto = WireFormat.frame(5, concat(new byte[] {0}, string(1, "k-7")));
        for (int i = 0; i < 6; i++) {
            keys.recordId("t", i % 3 == 0 ? avro : i % 3 == 1 ? record : proto);
        }
        assertThat(registry.fetches())
                .as("three schemas through a bound of two")
                .isGreaterThan(5);
    }
}
