package dev.rolloutingest.serde.values;

import com.google.protobuf.Descriptors.FieldDescriptor;
import java.nio.charset.StandardCharsets;

/**
 * The contract's fields of a scanned message ({@link ProtobufScan}) written in the contract's encoding: a field that
 * has presence and is absent takes the contract's default, one without presence Protobuf's default; integers checked
 * against the contract's int and long fields, created_at converted from the form its schema declares.
 */
final class ProtobufContractValues {
    private ProtobufContractValues() {}

    /** Writes {@code field} of the message in {@code b} that {@code scan} read. */
    static void write(ProtobufPlan plan, ProtobufScan scan, ContractField field, byte[] b, AvroTape tape) {
        int o = field.ordinal();
        FieldDescriptor fd = plan.slots[o];
        if (fd == null) {
            field.writeAbsent(
                    "not in message " + plan.message.getFullName() + " of Protobuf schema id " + plan.schemaId, tape);
            return;
        }
        boolean present = scan.present(plan, o);
        if (!present && (fd.hasPresence() || field.kind == ContractField.Kind.TIMESTAMP)) {
            field.writeAbsent("unset", tape);
            return;
        }
        tape.field(field.field);
        String name = field.fieldName;
        switch (field.kind) {
            case STRING -> string(scan, present, o, b, tape);
            case NULLABLE_STRING -> {
                tape.writeIndex(1);
                string(scan, present, o, b, tape);
            }
            case INT -> tape.writeInt(
                    WholeNumbers.toInt(name, present ? scan.integers[o] : 0, ProtobufScalars.unsigned64(fd)));
            case NULLABLE_LONG -> {
                long v = WholeNumbers.toLong(name, present ? scan.integers[o] : 0, ProtobufScalars.unsigned64(fd));
                tape.writeIndex(1);
                tape.writeLong(v);
            }
            case NULLABLE_FLOAT -> {
                tape.writeIndex(1);
                tape.writeFloat(present ? (float) scan.numbers[o] : 0f);
            }
            case BOOLEAN -> tape.writeBoolean(present && scan.integers[o] != 0);
            case NULLABLE_BYTES -> {
                tape.writeIndex(1);
                string(scan, present, o, b, tape);
            }
            case TIMESTAMP -> tape.writeLong(timestampMicros(scan, fd, o, b, name));
            case INT_ARRAY -> tape.writeIntArray(scan.ints[o], scan.counts[o]);
            case FLOAT_ARRAY -> tape.writeFloatArray(scan.floats[o], scan.counts[o]);
            case STRING_MAP -> scan.metadata.write(b, tape);
        }
    }

    private static void string(ProtobufScan scan, boolean present, int o, byte[] b, AvroTape tape) {
        if (!present) {
            tape.writeLong(0);
        } else {
            tape.writeBytes(b, scan.from[o], scan.to[o] - scan.from[o]);
        }
    }

    private static long timestampMicros(ProtobufScan scan, FieldDescriptor fd, int o, byte[] b, String name) {
        switch (fd.getJavaType()) {
            case MESSAGE -> {
                try {
                    return CreatedAt.ofSeconds(scan.seconds(), scan.nanos());
                } catch (ArithmeticException e) {
                    throw ValueErrors.wrongType(name, "a timestamp within 64-bit microseconds", scan.seconds() + " s");
                }
            }
            case STRING -> {
                String text = new String(b, scan.from[o], scan.to[o] - scan.from[o], StandardCharsets.UTF_8);
                try {
                    return CreatedAt.ofIso(text);
                } catch (RuntimeException e) {
                    throw ValueErrors.wrongType(name, "an ISO-8601 date-time", "'" + text + "'");
                }
            }
            default -> {
                long millis = WholeNumbers.toLong(name, scan.integers[o], ProtobufScalars.unsigned64(fd));
                try {
                    return CreatedAt.ofMillis(millis);
                } catch (ArithmeticException e) {
                    throw ValueErrors.wrongType(name, "epoch milliseconds within 64-bit microseconds", "" + millis);
                }
            }
        }
    }
}
