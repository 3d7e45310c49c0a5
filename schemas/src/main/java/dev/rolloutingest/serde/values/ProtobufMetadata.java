package dev.rolloutingest.serde.values;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import java.io.IOException;
import java.util.Arrays;

/**
 * The metadata map of one message ({@code map<string, string>}): its entries kept as ranges of the message's bytes
 * while the wire is scanned, written as the contract's map once the message is read. Part of a {@link ProtobufScan},
 * reused from message to message.
 */
final class ProtobufMetadata {
    /** The entries: key from, key to, value from, value to. */
    private int[] entries = new int[64];

    private int entryCount;

    void reset() {
        entryCount = 0;
    }

    /** One map entry of the metadata: its key (1) and value (2), each "" when absent, each last one kept. */
    void read(String name, CodedInputStream in, byte[] b, int offset) throws IOException {
        int limit = in.pushLimit(in.readRawVarint32());
        int keyFrom = 0;
        int keyTo = 0;
        int valueFrom = 0;
        int valueTo = 0;
        for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
            int number = WireFormat.getTagFieldNumber(tag);
            int wireType = WireFormat.getTagWireType(tag);
            if ((number == 1 || number == 2) && wireType == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                int length = in.readRawVarint32();
                int start = offset + in.getTotalBytesRead();
                in.skipRawBytes(length);
                ProtobufScalars.requireUtf8(b, start, length, name);
                if (number == 1) {
                    keyFrom = start;
                    keyTo = start + length;
                } else {
                    valueFrom = start;
                    valueTo = start + length;
                }
            } else if (number == 1 || number == 2) {
                throw ValueErrors.wrongType(name, "map<string, string> entries", "wire type " + wireType);
            } else if (!in.skipField(tag)) {
                throw new InvalidProtocolBufferException("an end-group tag in a map entry");
            }
        }
        in.popLimit(limit);
        if (entryCount * 4 == entries.length) {
            entries = Arrays.copyOf(entries, entries.length * 2);
        }
        int e = entryCount++ * 4;
        entries[e] = keyFrom;
        entries[e + 1] = keyTo;
        entries[e + 2] = valueFrom;
        entries[e + 3] = valueTo;
    }

    /** The metadata's entries, a key's last value only (a map's rule), in the order their last values came. */
    void write(byte[] b, AvroTape tape) {
        int kept = 0;
        boolean[] superseded = entryCount > 1 ? new boolean[entryCount] : null;
        for (int i = 0; i < entryCount; i++) {
            if (superseded != null) {
                for (int j = i + 1; j < entryCount; j++) {
                    if (sameKey(b, i, j)) {
                        superseded[i] = true;
                        break;
                    }
                }
            }
            if (superseded == null || !superseded[i]) {
                kept++;
            }
        }
        if (kept > 0) {
            tape.writeLong(kept);
            for (int i = 0; i < entryCount; i++) {
                if (superseded == null || !superseded[i]) {
                    int e = i * 4;
                    tape.writeBytes(b, entries[e], entries[e + 1] - entries[e]);
                    tape.writeBytes(b, entries[e + 2], entries[e + 3] - entries[e + 2]);
                }
            }
        }
        tape.writeLong(0);
    }

    private boolean sameKey(byte[] b, int i, int j) {
        return Arrays.equals(b, entries[i * 4], entries[i * 4 + 1], b, entries[j * 4], entries[j * 4 + 1]);
    }
}
