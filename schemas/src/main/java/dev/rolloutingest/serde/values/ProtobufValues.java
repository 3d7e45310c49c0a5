package dev.rolloutingest.serde.values;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import dev.rolloutingest.serde.ConfluentAvroDeserializer.UnknownFieldsListener;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A Protobuf message mapped to the contract by field name and written to an {@link AvroTape}. The wire is read by
 * protobuf-java's {@link CodedInputStream} in one pass ({@link ProtobufScan}): the contract's fields straight into
 * the tape's values ({@link ProtobufContractValues}, no message objects), the fields the message adds collected as
 * their wire bytes and parsed here by {@link DynamicMessage} ({@link ProtobufAddedValues} writes them). As Protobuf
 * reads a message: a field number the schema lacks (a producer's newer
 * schema) is skipped and told to the listener, groups included; of a oneof's members the last on the wire wins; a
 * scalar seen twice keeps its last value, a message seen twice is merged, a repeated field's values are
 * concatenated (packed or not), a map key seen twice keeps its last value. A field of the schema whose value comes
 * with another wire type fails the record ({@code not-protobuf}): the bytes are not this message.
 *
 * <p>What each contract field takes, checked once per schema ({@link ProtobufPlan}):
 * <ul>
 *   <li>strings: {@code string}; int and long fields: any integer type (values that do not fit are {@code
 *       wrong-type}); floats: {@code float} or {@code double}; include_in_training: {@code bool}; binary_payload:
 *       {@code bytes}; the token lists: {@code repeated} integers (packed or not); output_logprobs: {@code repeated}
 *       float or double; metadata: {@code map<string, string>};
 *   <li>created_at: {@code google.protobuf.Timestamp} (nanoseconds cut to microseconds), an integer of epoch
 *       milliseconds, or an ISO-8601 string;
 *   <li>a field that has presence ({@code optional}, a message, a oneof's member) and is absent is null or the
 *       contract's default; a proto3 field without presence that is absent holds Protobuf's default (0, "", false,
 *       empty), as the producer meant; a required contract field the message does not declare, or a created_at left
 *       unset, is {@code missing-field}.
 * </ul>
 *
 * <p>One per thread: it keeps the read's state. Plans are shared.
 */
final class ProtobufValues {
    private static final int CONTRACT = ProtobufPlan.CONTRACT;

    private final AddedFields addedFields;
    private final UnknownFieldsListener unknownFields;
    private final ProtobufScan scan;

    ProtobufValues(AddedFields addedFields, UnknownFieldsListener unknownFields) {
        this.addedFields = addedFields;
        this.unknownFields = unknownFields;
        this.scan = new ProtobufScan(addedFields.keep());
    }

    /** Writes the row of the message in {@code bytes[offset, end)} to {@code tape}. */
    void read(ProtobufPlan plan, byte[] bytes, int offset, int end, AvroTape tape) {
        if (plan.schemaError != null) {
            throw plan.schemaError;
        }
        tape.reset();
        try {
            scan.scan(plan, bytes, offset, end);
            for (ContractField field : ContractField.ALL) {
                ProtobufContractValues.write(plan, scan, field, bytes, tape);
            }
            if (!plan.addedNames.isEmpty()) {
                if (addedFields.keep()) {
                    added(plan, tape);
                } else {
                    addedFields.dropped(plan.schemaId, plan.addedNames);
                }
            }
        } catch (IOException | IndexOutOfBoundsException | IllegalArgumentException e) {
            throw ValueErrors.of(
                    ValueErrors.NOT_PROTOBUF,
                    "the value is truncated or not a Protobuf " + plan.message.getFullName() + " (schema id "
                            + plan.schemaId + "): " + e.getMessage(),
                    e);
        }
        if (!scan.unknown().isEmpty()) {
            List<String> numbers = new ArrayList<>(scan.unknown().size());
            scan.unknown().forEach(n -> numbers.add(Integer.toString(n)));
            unknownFields.dropped(plan.schemaId, numbers);
        }
    }

    private void added(ProtobufPlan plan, AvroTape tape) throws IOException {
        // partial: the contract's required fields are not in these bytes (and are checked as the contract's)
        DynamicMessage message = scan.addedLength() == 0
                ? DynamicMessage.getDefaultInstance(plan.message)
                : DynamicMessage.newBuilder(plan.message)
                        .mergeFrom(CodedInputStream.newInstance(scan.added(), 0, scan.addedLength()))
                        .buildPartial();
        for (int i = 0; i < plan.addedNames.size(); i++) {
            int slot = CONTRACT + i;
            FieldDescriptor fd = plan.slots[slot];
            boolean present = scan.present(plan, slot);
            if (!present && fd.hasPresence()) {
                continue; // absent: null in the row
            }
            tape.field(plan.addedReaderFields[i]);
            ProtobufAddedValues.write(fd, message, present, tape);
        }
    }
}
