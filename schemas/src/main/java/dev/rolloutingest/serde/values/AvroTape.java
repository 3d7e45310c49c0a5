package dev.rolloutingest.serde.values;

import dev.rolloutingest.serde.ContractRow;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;

/**
 * One row in the Avro binary encoding of the contract, written by a JSON or Protobuf decoder and read back by the
 * same {@code FieldReader} as an Avro record: the fields in the order they were written ({@link #order}). One per
 * thread, reused: its buffer grows to the largest row read (at most about the record's own size, which
 * {@code rollout.max.payload.bytes} bounds) and no row allocates it again.
 *
 * <p>Over 300 lines because it writes the encoding twice over, by Avro's types (for the parser and the Protobuf
 * decoder) and by the contract's fields ({@link ContractRow}, for the JSON scan), and both share one buffer.
 */
final class AvroTape implements ContractRow {
    private static final int CONTRACT = ContractField.ALL.length;

    private byte[] buffer = new byte[4096];
    private int length;
    private final Schema.Field[] contractOrder = new Schema.Field[CONTRACT];
    private Schema.Field[] extraOrder = new Schema.Field[4];
    private int fields;
    private int extras;
    private BinaryDecoder decoder;
    private final Base64Text payloads = new Base64Text();
    /** Scratch for values whose count the encoding needs before them (arrays, maps, decoded bytes). */
    int[] ints = new int[256];

    float[] floats = new float[256];

    void reset() {
        length = 0;
        fields = 0;
        extras = 0;
    }

    /** Starts the value of {@code field}: its bytes follow, then the next field's. */
    void field(Schema.Field field) {
        if (field.pos() < CONTRACT) {
            contractOrder[fields++] = field;
        } else {
            if (extras == extraOrder.length) {
                extraOrder = Arrays.copyOf(extraOrder, extras * 2);
            }
            extraOrder[extras++] = field;
        }
    }

    int fieldCount() {
        return fields + extras;
    }

    /**
     * The fields in the order their values were written. Contract fields only (the common case): the reused array.
     * A decoder writes every contract field before the first added one, so the two parts keep the tape's order.
     */
    Schema.Field[] order() {
        if (extras == 0) {
            return contractOrder;
        }
        Schema.Field[] order = Arrays.copyOf(contractOrder, fields + extras);
        System.arraycopy(extraOrder, 0, order, fields, extras);
        return order;
    }

    BinaryDecoder decoder() {
        decoder = DecoderFactory.get().binaryDecoder(buffer, 0, length, decoder);
        return decoder;
    }

    int length() {
        return length;
    }

    /** A copy of the bytes written, for comparing two decoders' rows. */
    byte[] written() {
        return Arrays.copyOf(buffer, length);
    }

    void writeLong(long n) {
        ensure(10);
        long v = (n << 1) ^ (n >> 63);
        while ((v & ~0x7FL) != 0) {
            buffer[length++] = (byte) ((v & 0x7F) | 0x80);
            v >>>= 7;
        }
        buffer[length++] = (byte) v;
    }

    void writeInt(int n) {
        writeLong(n);
    }

    void writeIndex(int branch) {
        writeLong(branch);
    }

    void writeBoolean(boolean b) {
        ensure(1);
        buffer[length++] = (byte) (b ? 1 : 0);
    }

    void writeFloat(float f) {
        ensure(4);
        int bits = Float.floatToRawIntBits(f);
        buffer[length++] = (byte) bits;
        buffer[length++] = (byte) (bits >>> 8);
        buffer[length++] = (byte) (bits >>> 16);
        buffer[length++] = (byte) (bits >>> 24);
    }

    void writeDouble(double d) {
        ensure(8);
        long bits = Double.doubleToRawLongBits(d);
        for (int i = 0; i < 8; i++) {
            buffer[length++] = (byte) (bits >>> (8 * i));
        }
    }

    /** An array of ints: one block of {@code count} items, then the end (an empty array is the end alone). */
    void writeIntArray(int[] items, int count) {
        if (count > 0) {
            writeLong(count);
            for (int i = 0; i < count; i++) {
                writeInt(items[i]);
            }
        }
        writeLong(0);
    }

    /** An array of floats, as {@link #writeIntArray}. */
    void writeFloatArray(float[] items, int count) {
        if (count > 0) {
            writeLong(count);
            for (int i = 0; i < count; i++) {
                writeFloat(items[i]);
            }
        }
        writeLong(0);
    }

    /** Bytes or a string already in UTF-8: length, then the bytes. */
    void writeBytes(byte[] bytes, int offset, int count) {
        writeLong(count);
        ensure(count);
        System.arraycopy(bytes, offset, buffer, length, count);
        length += count;
    }

    void writeString(String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        writeBytes(bytes, 0, bytes.length);
    }

    /** A string from UTF-16 characters, encoded to UTF-8 straight into the tape (no String in between). */
    void writeString(char[] chars, int offset, int count) {
        // at most 3 bytes per char; the length prefix needs the byte count first: encode after a reserved prefix
        int maxBytes = count * 3;
        int prefix = varLongSize(maxBytes);
        ensure(prefix + maxBytes);
        int start = length + prefix;
        int p = start;
        for (int i = offset, end = offset + count; i < end; i++) {
            char c = chars[i];
            if (c < 0x80) {
                buffer[p++] = (byte) c;
            } else if (c < 0x800) {
                buffer[p++] = (byte) (0xC0 | (c >> 6));
                buffer[p++] = (byte) (0x80 | (c & 0x3F));
            } else if (Character.isHighSurrogate(c) && i + 1 < end && Character.isLowSurrogate(chars[i + 1])) {
                int cp = Character.toCodePoint(c, chars[++i]);
                buffer[p++] = (byte) (0xF0 | (cp >> 18));
                buffer[p++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
                buffer[p++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
                buffer[p++] = (byte) (0x80 | (cp & 0x3F));
            } else if (Character.isSurrogate(c)) {
                buffer[p++] = (byte) '?'; // a lone surrogate has no UTF-8 form; String.getBytes does the same
            } else {
                buffer[p++] = (byte) (0xE0 | (c >> 12));
                buffer[p++] = (byte) (0x80 | ((c >> 6) & 0x3F));
                buffer[p++] = (byte) (0x80 | (c & 0x3F));
            }
        }
        int bytes = p - start;
        int needed = varLongSize(bytes);
        if (needed != prefix) {
            System.arraycopy(buffer, start, buffer, length + needed, bytes);
        }
        writeLong(bytes);
        length += bytes;
    }

    /**
     * The base64 text of a JSON string in UTF-8 {@code json} from {@code from} (after its opening quote) to its closing
     * quote, decoded into the tape as bytes ({@link Base64Text}). Returns the index of the closing quote; -1,
     * with the tape as it was, for a string with an escape, a space or anything else: the caller then asks the JSON
     * parser, whose decoder has the final word.
     */
    int writeBase64(byte[] json, int from, int end) {
        int close = payloads.decode(json, from, end);
        if (close < 0) {
            return -1;
        }
        int count = payloads.count();
        writeLong(count);
        ensure(count);
        System.arraycopy(payloads.decoded(), 0, buffer, length, count);
        length += count;
        return close;
    }

    /** Zig-zag varint size of a non-negative value. */
    private static int varLongSize(long n) {
        long v = n << 1;
        int size = 1;
        while ((v & ~0x7FL) != 0) {
            v >>>= 7;
            size++;
        }
        return size;
    }

    // The contract's fields as a ContractRow: each starts its value, a nullable one with its union branch.

    @Override
    public void string(int field, byte[] utf8, int offset, int length) {
        startValue(field);
        writeBytes(utf8, offset, length);
    }

    @Override
    public void nullValue(int field) {
        field(ContractField.ALL[field].field);
        writeIndex(0);
    }

    @Override
    public void intValue(int field, int value) {
        startValue(field);
        writeInt(value);
    }

    @Override
    public void longValue(int field, long value) {
        startValue(field);
        writeLong(value);
    }

    @Override
    public void floatValue(int field, float value) {
        startValue(field);
        writeFloat(value);
    }

    @Override
    public void booleanValue(int field, boolean value) {
        startValue(field);
        writeBoolean(value);
    }

    @Override
    public void ints(int field, int[] items, int count) {
        startValue(field);
        writeIntArray(items, count);
    }

    @Override
    public void floats(int field, float[] items, int count) {
        startValue(field);
        writeFloatArray(items, count);
    }

    @Override
    public void bytes(int field, byte[] bytes, int offset, int length) {
        startValue(field);
        writeBytes(bytes, offset, length);
    }

    @Override
    public void mapStart(int field, int entries) {
        startValue(field);
        if (entries > 0) {
            writeLong(entries);
        }
    }

    @Override
    public void mapKey(byte[] utf8, int offset, int length) {
        writeBytes(utf8, offset, length);
    }

    @Override
    public void mapValue(byte[] utf8, int offset, int length) {
        writeBytes(utf8, offset, length);
    }

    @Override
    public void mapEnd() {
        writeLong(0);
    }

    /** Starts a contract field's value that is there: a nullable field's non-null branch first. */
    private void startValue(int position) {
        ContractField f = ContractField.ALL[position];
        field(f.field);
        if (f.nullable()) {
            writeIndex(1);
        }
    }

    int[] ints(int capacity) {
        if (ints.length < capacity) {
            ints = Arrays.copyOf(ints, Math.max(capacity, ints.length * 2));
        }
        return ints;
    }

    float[] floats(int capacity) {
        if (floats.length < capacity) {
            floats = Arrays.copyOf(floats, Math.max(capacity, floats.length * 2));
        }
        return floats;
    }

    private void ensure(int more) {
        if (length + more > buffer.length) {
            buffer = Arrays.copyOf(buffer, Math.max(length + more, buffer.length * 2));
        }
    }
}
