package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import java.util.Base64;
import org.junit.jupiter.api.Test;

/** A base64 descriptor no protoc makes is schema-unreadable, whatever protobuf-java makes of it. */
class ProtoSchemasTest {
    private static String base64(DescriptorProto message) {
        return Base64.getEncoder()
                .encodeToString(FileDescriptorProto.newBuilder()
                        .setName("hand-made.proto")
                        .setSyntax("proto3")
                        .addMessageType(message)
                        .build()
                        .toByteArray());
    }

    private static void unreadable(String schema, String mentions) {
        assertThatThrownBy(() -> ProtoSchemas.file(31, schema))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("schema-unreadable"))
                .hasMessageContaining(mentions);
    }

    @Test
    void aFieldWithoutATypeIsUnreadableNotANullPointer() {
        unreadable(
                base64(DescriptorProto.newBuilder()
                        .setName("A")
                        .addField(FieldDescriptorProto.newBuilder()
                                .setName("a")
                                .setNumber(1)
                                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL))
                        .build()),
                "schema id 31");
    }

    @Test
    void aMapEntryWithoutItsValueIsUnreadable() {
        DescriptorProto entry = DescriptorProto.newBuilder()
                .setName("MEntry")
                .setOptions(MessageOptions.newBuilder().setMapEntry(true))
                .addField(FieldDescriptorProto.newBuilder()
                        .setName("key")
                        .setNumber(1)
                        .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL)
                        .setType(FieldDescriptorProto.Type.TYPE_STRING))
                .build();
        unreadable(
                base64(DescriptorProto.newBuilder()
                        .setName("A")
                        .addNestedType(entry)
                        .addField(FieldDescriptorProto.newBuilder()
                                .setName("m")
                                .setNumber(1)
                                .setLabel(FieldDescriptorProto.Label.LABEL_REPEATED)
                                .setTypeName("MEntry"))
                        .build()),
                "map entry A.MEntry");
    }
}
