package dev.rolloutingest.serde.values;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The values of a message's added fields, parsed by protobuf-java ({@link DynamicMessage}: groups, merged messages,
 * oneofs and maps as Protobuf defines them), written in the Avro encoding of {@link ProtobufPlan#avroOf}. A map key
 * that comes twice keeps its last value; an open enum's value the schema does not name is written as its number.
 */
final class ProtobufAddedValues {
    private ProtobufAddedValues() {}

    /** Writes field {@code fd} of {@code message}; {@code present} false writes it as unset. */
    static void write(FieldDescriptor fd, DynamicMessage message, boolean present, AvroTape tape) {
        field(fd, message, present, fd.getName(), tape);
    }

    private static void field(FieldDescriptor fd, DynamicMessage message, boolean present, String path, AvroTape tape) {
        if (fd.isMapField()) {
            FieldDescriptor key = fd.getMessageType().findFieldByNumber(1);
            FieldDescriptor value = fd.getMessageType().findFieldByNumber(2);
            Map<Object, DynamicMessage> entries = new LinkedHashMap<>();
            if (present) {
                for (Object entry : (List<?>) message.getField(fd)) {
                    DynamicMessage e = (DynamicMessage) entry;
                    entries.put(e.getField(key), e);
                }
            }
            if (!entries.isEmpty()) {
                tape.writeLong(entries.size());
                for (DynamicMessage entry : entries.values()) {
                    if (key.getJavaType() == FieldDescriptor.JavaType.STRING) {
                        tape.writeString((String) entry.getField(key));
                        single(value, entry.getField(value), path + ".value", tape);
                    } else {
                        single(fd, entry, path, tape);
                    }
                }
            }
            tape.writeLong(0);
            return;
        }
        if (fd.isRepeated()) {
            List<?> items = present ? (List<?>) message.getField(fd) : List.of();
            if (!items.isEmpty()) {
                tape.writeLong(items.size());
                for (int i = 0; i < items.size(); i++) {
                    single(fd, items.get(i), path + "[" + i + "]", tape);
                }
            }
            tape.writeLong(0);
            return;
        }
        if (fd.hasPresence()) {
            boolean set = present && message.hasField(fd);
            tape.writeIndex(set ? 1 : 0);
            if (set) {
                single(fd, message.getField(fd), path, tape);
            }
            return;
        }
        single(fd, present ? message.getField(fd) : defaultOf(fd), path, tape);
    }

    private static Object defaultOf(FieldDescriptor fd) {
        return fd.getJavaType() == FieldDescriptor.JavaType.MESSAGE
                ? DynamicMessage.getDefaultInstance(fd.getMessageType())
                : fd.getDefaultValue();
    }

    /** One value in the Avro encoding of ProtobufPlan's single(fd). */
    private static void single(FieldDescriptor fd, Object value, String path, AvroTape tape) {
        switch (fd.getType()) {
            case INT32, SINT32, SFIXED32 -> tape.writeLong((Integer) value);
            case INT64, SINT64, SFIXED64 -> tape.writeLong((Long) value);
            case UINT32, FIXED32 -> tape.writeLong((Integer) value & 0xFFFFFFFFL);
            case UINT64, FIXED64 -> tape.writeLong(WholeNumbers.toLong(path, (Long) value, true));
            case FLOAT -> tape.writeFloat((Float) value);
            case DOUBLE -> tape.writeDouble((Double) value);
            case BOOL -> tape.writeBoolean((Boolean) value);
            case STRING -> tape.writeString((String) value);
            case BYTES -> {
                byte[] bytes = ((ByteString) value).toByteArray();
                tape.writeBytes(bytes, 0, bytes.length);
            }
            case ENUM -> {
                EnumValueDescriptor e = (EnumValueDescriptor) value;
                EnumValueDescriptor named = fd.getEnumType().findValueByNumber(e.getNumber());
                tape.writeString(named == null ? Integer.toString(e.getNumber()) : named.getName());
            }
            case MESSAGE, GROUP -> {
                DynamicMessage message = (DynamicMessage) value;
                for (FieldDescriptor child : fd.getMessageType().getFields()) {
                    field(child, message, true, path + "." + child.getName(), tape);
                }
            }
        }
    }
}
