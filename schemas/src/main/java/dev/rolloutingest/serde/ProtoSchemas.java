package dev.rolloutingest.serde;

import com.google.protobuf.AnyProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DurationProto;
import com.google.protobuf.EmptyProto;
import com.google.protobuf.FieldMaskProto;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.StructProto;
import com.google.protobuf.TimestampProto;
import com.google.protobuf.WrappersProto;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * A registered Protobuf schema as descriptors. The registry holds it in either form producers register: the
 * {@code .proto} text (Confluent's Java serializer) or a base64-encoded {@code FileDescriptorProto} (Confluent's
 * Python serializer). Imports of Google's well-known types resolve to protobuf-java's own; other imports (registry
 * references) are not read.
 */
public final class ProtoSchemas {
    private static final Map<String, Descriptors.FileDescriptor> WELL_KNOWN = Map.of(
            "google/protobuf/timestamp.proto", TimestampProto.getDescriptor(),
            "google/protobuf/duration.proto", DurationProto.getDescriptor(),
            "google/protobuf/wrappers.proto", WrappersProto.getDescriptor(),
            "google/protobuf/struct.proto", StructProto.getDescriptor(),
            "google/protobuf/any.proto", AnyProto.getDescriptor(),
            "google/protobuf/empty.proto", EmptyProto.getDescriptor(),
            "google/protobuf/field_mask.proto", FieldMaskProto.getDescriptor());

    /** The reasons of a record whose schema cannot be read, and of one whose bytes are not its message. */
    public static final String SCHEMA_UNREADABLE = "schema-unreadable";

    public static final String NOT_PROTOBUF = "not-protobuf";

    private ProtoSchemas() {}

    /** The file of a registered schema's text; schema-unreadable when it is neither form or imports another file. */
    public static Descriptors.FileDescriptor file(int schemaId, String text) {
        FileDescriptorProto proto;
        try {
            proto = isProtoText(text)
                    ? ProtoText.parse("schema-" + schemaId + ".proto", text)
                    : FileDescriptorProto.parseFrom(Base64.getMimeDecoder().decode(text.trim()));
        } catch (IllegalArgumentException | InvalidProtocolBufferException e) {
            throw unreadable(schemaId, "neither .proto text nor a base64 FileDescriptorProto: " + e.getMessage(), e);
        }
        List<Descriptors.FileDescriptor> dependencies = new ArrayList<>();
        for (String dependency : proto.getDependencyList()) {
            Descriptors.FileDescriptor known = WELL_KNOWN.get(dependency);
            if (known == null) {
                throw unreadable(
                        schemaId,
                        "it imports " + dependency + "; only Google's well-known types are read, not references",
                        null);
            }
            dependencies.add(known);
        }
        // text fields are checked as UTF-8 in proto2 files too, as they are in proto3 (protobuf-java's option)
        proto = proto.toBuilder()
                .setOptions(proto.getOptions().toBuilder().setJavaStringCheckUtf8(true))
                .build();
        try {
            Descriptors.FileDescriptor file = Descriptors.FileDescriptor.buildFrom(
                    proto, dependencies.toArray(new Descriptors.FileDescriptor[0]));
            requireWellFormedMaps(schemaId, file);
            return file;
        } catch (Descriptors.DescriptorValidationException e) {
            throw unreadable(schemaId, e.getMessage(), e);
        } catch (RuntimeException e) {
            // protobuf-java trusts what protoc makes: a descriptor protoc never makes (a field without a type) can
            // fail with another exception, and is as unreadable
            throw unreadable(schemaId, "a descriptor protobuf-java cannot build: " + e, e);
        }
    }

    /**
     * A map's entry message as protoc makes it: a key (1) and a value (2), neither repeated. protobuf-java does not
     * check a descriptor's (protoc refuses to write map_entry by hand), and readers of maps rely on both fields.
     */
    private static void requireWellFormedMaps(int schemaId, Descriptors.FileDescriptor file) {
        java.util.ArrayDeque<Descriptors.Descriptor> messages = new java.util.ArrayDeque<>(file.getMessageTypes());
        while (!messages.isEmpty()) {
            Descriptors.Descriptor message = messages.pop();
            messages.addAll(message.getNestedTypes());
            if (!message.getOptions().getMapEntry()) {
                continue;
            }
            Descriptors.FieldDescriptor key = message.findFieldByNumber(1);
            Descriptors.FieldDescriptor value = message.findFieldByNumber(2);
            if (message.getFields().size() != 2
                    || key == null
                    || value == null
                    || key.isRepeated()
                    || value.isRepeated()) {
                throw unreadable(
                        schemaId,
                        "map entry " + message.getFullName() + " is not a key (1) and a value (2), as protoc makes it",
                        null);
            }
        }
    }

    /** .proto text has statements ({@code ;}); base64 never has that character. */
    static boolean isProtoText(String text) {
        return text.indexOf(';') >= 0 || text.indexOf('{') >= 0;
    }

    /**
     * The message Confluent's message indexes name: the first is a top-level message of the file, each next one a
     * message nested in the one before; none means the first message.
     */
    public static Descriptors.Descriptor message(int schemaId, Descriptors.FileDescriptor file, int[] indexes) {
        List<Descriptors.Descriptor> candidates = file.getMessageTypes();
        Descriptors.Descriptor message = null;
        for (int index : indexes.length == 0 ? new int[] {0} : indexes) {
            if (index < 0 || index >= candidates.size()) {
                throw new SerdeException(
                        NOT_PROTOBUF,
                        "message indexes " + java.util.Arrays.toString(indexes)
                                + " name no message of Protobuf schema id " + schemaId,
                        null);
            }
            message = candidates.get(index);
            candidates = message.getNestedTypes();
        }
        return message;
    }

    private static RuntimeException unreadable(int schemaId, String why, Throwable cause) {
        return new SerdeException(
                SCHEMA_UNREADABLE, "Protobuf schema id " + schemaId + " cannot be read: " + why, cause);
    }

    /**
     * A {@code .proto} text as the FileDescriptorProto protoc makes of it, as Confluent's Python serializer
     * registers a schema (base64-encoded); IllegalArgumentException naming the line for text it cannot read.
     */
    public static FileDescriptorProto descriptorOf(String name, String text) {
        return ProtoText.parse(name, text);
    }
}
