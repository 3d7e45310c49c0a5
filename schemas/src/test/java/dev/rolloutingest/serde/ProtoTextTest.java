package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.google.protobuf.Descriptors;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A registered {@code .proto} text the parser cannot read fails as schema-unreadable, naming the line. */
class ProtoTextTest {
    private static void unreadable(String text, String mentions) {
        assertTimeoutPreemptively(Duration.ofSeconds(5), () -> assertThatThrownBy(() -> ProtoSchemas.file(21, text))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("schema-unreadable"))
                .hasMessageContaining(mentions));
    }

    @Test
    void anUnterminatedEnumValueOptionIsAnErrorNotAHang() {
        unreadable("syntax = \"proto3\";\nenum Kind {\n  KIND_UNSET = 0 [deprecated = true", "line 3");
    }

    @Test
    void aFieldNameThatEndsTheTextIsAnErrorNotANullPointer() {
        unreadable("syntax = \"proto3\";\nmessage A {\n  string", "line 3");
    }

    @Test
    void everyNameTheTextEndsBeforeIsAnError() {
        for (String cut : new String[] {
            "package",
            "message",
            "enum",
            "enum E { A",
            "message A { map<string",
            "message A { map<string, string>",
            "message A { repeated",
            "message A { string a = 1 [packed =",
            "message A { oneof",
            "message A { string a = 1 [(custom) = {",
            "message A { optional group",
            "import",
            "message A { message B { message C {"
        }) {
            unreadable("syntax = \"proto2\"; " + cut, "line 1");
        }
        unreadable("syntax = ;", "line 1");
        unreadable("message A { = 1; }", "line 1");
    }

    @Test
    void aProto2GroupIsANestedMessageAndAGroupFieldAsProtocMakesThem() {
        Descriptors.Descriptor search = ProtoSchemas.file(
                        22,
                        "syntax = \"proto2\";\nmessage Search {\n  repeated group Result = 1 [deprecated = true] {\n"
                                + "    required string url = 2;\n  }\n  optional int32 page = 3;\n}\n")
                .getMessageTypes()
                .get(0);
        Descriptors.FieldDescriptor result = search.findFieldByName("result");
        assertThat(result.getType()).isEqualTo(Descriptors.FieldDescriptor.Type.GROUP);
        assertThat(result.isRepeated()).isTrue();
        assertThat(result.getMessageType().getFullName()).isEqualTo("Search.Result");
        assertThat(result.getMessageType().findFieldByName("url").getNumber()).isEqualTo(2);
        assertThat(search.findFieldByName("page").getNumber()).isEqualTo(3);
    }

    @Test
    void nestingDeeperThanProtocReadsIsAnError() {
        unreadable("message A {".repeat(10_000), "nest");
    }
}
