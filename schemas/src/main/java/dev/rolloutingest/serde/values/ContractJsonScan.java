package dev.rolloutingest.serde.values;

import dev.rolloutingest.serde.ContractRow;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.util.Arrays;

/**
 * A JSON rollout read straight off its UTF-8 bytes into a {@link ContractRow} (a batch's columns, or the tape), with no
 * parser tokens, char arrays or Strings in between: strings are copied as the bytes they are (escapes decoded),
 * numbers read from their digits, base64 decoded once. It reads the shape producers write: one object of contract fields, each once, with well-formed values.
 * Anything else (a field beyond the contract, a field twice, a value of the wrong type, a number it cannot convert
 * exactly, a lone surrogate, malformed UTF-8 or JSON) it declines, leaving the row to {@link JsonValues}' parser,
 * whose rules and errors are the format's: so a value this reads gives the very row the parser would write, and a
 * value it declines reads (or fails) exactly as before.
 *
 * <p>Over 300 lines because it is a whole reader of JSON's grammar (strings with their escapes and UTF-8, numbers,
 * literals, arrays, the metadata object) for the contract's fields: splitting it would split one cursor's state.
 */
final class ContractJsonScan {
    private static final ContractField[] FIELDS = ContractField.ALL;
    /** Each contract field's name in UTF-8, at the slot of its length and first letter (no two share one). */
    private static final byte[][] NAMES = new byte[32 * 32][];

    private static final ContractField[] NAMED = new ContractField[32 * 32];

    static {
        for (ContractField f : FIELDS) {
            byte[] name = f.fieldName.getBytes(StandardCharsets.US_ASCII);
            int slot = slot(name.length, name[0]);
            if (NAMES[slot] != null) {
                throw new ExceptionInInitializerError(f.fieldName + " shares its name's slot: make the slots wider");
            }
            NAMES[slot] = name;
            NAMED[slot] = f;
        }
    }

    private static int slot(int length, byte first) {
        return (length & 31) << 5 | first & 31;
    }

    /**
     * The longest string and number the parser takes (its default read constraints, {@code StreamReadConstraints}):
     * longer ones are declined, so the parser refuses them as before.
     */
    private static final int MAX_STRING_BYTES = 20_000_000;

    private static final int MAX_NUMBER_CHARS = 1000;

    /** The longest object key the parser takes, in UTF-8 bytes (a metadata key). */
    private static final int MAX_NAME_BYTES = 50_000;

    /** Thrown, without a stack, where the scan gives the row up to the parser. */
    private static final RuntimeException DECLINE = new RuntimeException("declined", null, false, false) {};

    private byte[] in;
    private int pos;
    private int end;
    private ContractRow row;
    /**
     * Scratch, one scan per thread: a string's decoded escapes and a map's entry spans. Each grows to
     * the largest of its kind read, which the record's size bounds.
     */
    private byte[] text = new byte[256];

    private int[] spans = new int[32];

    /** Scratch for a row's arrays, each growing to the largest read (the record bounds it). */
    private int[] ints = new int[256];

    private float[] floats = new float[256];
    private final Base64Text payloads = new Base64Text();
    /** The last string read ({@link #string}): its UTF-8 bytes are {@code stringBytes[stringStart, +stringLength)}. */
    private byte[] stringBytes;

    private int stringStart;
    private int stringLength;

    /**
     * Writes the row of the JSON object in {@code bytes[offset, offset + length)} to {@code tape}, or returns false
     * with the tape reset when the value is not of the shape this reads.
     */
    boolean read(byte[] bytes, int offset, int length, AvroTape tape) {
        tape.reset();
        if (read(bytes, offset, length, (ContractRow) tape)) {
            return true;
        }
        tape.reset();
        return false;
    }

    /**
     * Writes the row of the JSON object in {@code bytes[offset, offset + length)} to {@code row}, or returns false when
     * the value is not of the shape this reads: {@code row} may then hold some of its fields, which the parser's
     * reading of the value writes over.
     */
    boolean read(byte[] bytes, int offset, int length, ContractRow row) {
        this.in = bytes;
        this.pos = offset;
        this.end = offset + length;
        this.row = row;
        try {
            object();
            return true;
        } catch (RuntimeException declined) {
            if (declined != DECLINE && !(declined instanceof ArithmeticException)) {
                throw declined;
            }
            return false;
        } finally {
            this.in = null;
            this.row = null;
            this.stringBytes = null;
        }
    }

    private void object() {
        skipSpace();
        expect('{');
        int seen = 0;
        skipSpace();
        if (peek() != '}') {
            while (true) {
                skipSpace();
                ContractField field = fieldName();
                int bit = 1 << field.ordinal();
                if ((seen & bit) != 0) {
                    throw DECLINE; // duplicate-field is the parser's to say
                }
                seen |= bit;
                skipSpace();
                expect(':');
                skipSpace();
                if (peek() == 'n') {
                    literal("null");
                    if (field.required) {
                        throw DECLINE;
                    }
                    field.writeAbsent("null", row);
                } else {
                    value(field);
                }
                skipSpace();
                byte b = next();
                if (b == '}') {
                    break;
                }
                if (b != ',') {
                    throw DECLINE;
                }
            }
        } else {
            pos++;
        }
        skipSpace();
        if (pos != end) {
            throw DECLINE;
        }
        for (ContractField field : FIELDS) {
            if ((seen & (1 << field.ordinal())) == 0) {
                if (field.required) {
                    throw DECLINE;
                }
                field.writeAbsent("absent", row);
            }
        }
    }

    /** The contract field a quoted name (no escapes) names; anything else declines. */
    private ContractField fieldName() {
        expect('"');
        int start = pos;
        int close = start;
        while (close < end && in[close] != '"') {
            if (in[close] == '\\') {
                throw DECLINE;
            }
            close++;
        }
        int length = close - start;
        if (length == 0 || close == end) {
            throw DECLINE;
        }
        int slot = slot(length, in[start]);
        byte[] name = NAMES[slot];
        if (name == null || name.length != length || !Arrays.equals(name, 0, length, in, start, close)) {
            throw DECLINE; // a field beyond the contract: the parser's
        }
        pos = close + 1;
        return NAMED[slot];
    }

    private void value(ContractField field) {
        int position = field.ordinal();
        switch (field.kind) {
            case STRING, NULLABLE_STRING -> {
                string();
                row.string(position, stringBytes, stringStart, stringLength);
            }
            case INT -> {
                long value = wholeNumber();
                if (!WholeNumbers.fitsInt(value)) {
                    throw DECLINE;
                }
                row.intValue(position, (int) value);
            }
            case TIMESTAMP -> row.longValue(position, timestamp());
            case INT_ARRAY -> intArray(position);
            case FLOAT_ARRAY -> floatArray(position);
            case NULLABLE_FLOAT -> row.floatValue(position, floatNumber());
            case NULLABLE_LONG -> row.longValue(position, wholeNumber());
            case BOOLEAN -> row.booleanValue(position, bool());
            case STRING_MAP -> stringMap(position);
            case NULLABLE_BYTES -> base64(position);
        }
    }

    /** A payload's base64 string, decoded once into the scratch and written as the row's bytes. */
    private void base64(int position) {
        expect('"');
        int close = payloads.decode(in, pos, end);
        if (close < 0) {
            throw DECLINE;
        }
        row.bytes(position, payloads.decoded(), 0, payloads.count());
        pos = close + 1;
    }

    /**
     * A JSON string's UTF-8 bytes, left in {@link #stringBytes}: the value's own when it has no escape, else decoded
     * into the scratch.
     */
    private void string() {
        expect('"');
        int start = pos;
        int close = plainRun(start);
        if (close < end && in[close] == '"' && close - start <= MAX_STRING_BYTES) { // no escape: its UTF-8 bytes
            stringBytes = in;
            stringStart = start;
            stringLength = close - start;
            pos = close + 1;
            return;
        }
        if (close - start > MAX_STRING_BYTES) {
            throw DECLINE;
        }
        int n = unescaped(start);
        if (n > MAX_STRING_BYTES) { // decoded, its UTF-8 bytes: never fewer than the parser's characters
            throw DECLINE;
        }
        stringBytes = text;
        stringStart = 0;
        stringLength = n;
    }

    /**
     * The index of the first byte at or after {@code from} that ends a plain run: a quote, a backslash or the end.
     * Declines a control character (the parser refuses it unescaped) and malformed UTF-8.
     */
    private int plainRun(int from) {
        int i = from;
        while (i < end) {
            int b = in[i];
            if (b >= 0x20) {
                if (b == '"' || b == '\\') {
                    return i;
                }
                i++;
            } else if (b < 0) {
                i = utf8Sequence(i);
            } else {
                throw DECLINE;
            }
        }
        return i;
    }

    /**
     * The index after the well-formed UTF-8 sequence at {@code i} (no overlong forms, no surrogates, at most
     * U+10FFFF: those decode to the same characters in any reader); anything else declines.
     */
    private int utf8Sequence(int i) {
        int b = in[i] & 0xFF;
        int count;
        int min;
        if (b >= 0xC2 && b <= 0xDF) {
            count = 1;
            min = 0x80;
        } else if (b >= 0xE0 && b <= 0xEF) {
            count = 2;
            min = 0x800;
        } else if (b >= 0xF0 && b <= 0xF4) {
            count = 3;
            min = 0x10000;
        } else {
            throw DECLINE;
        }
        if (i + count >= end) {
            throw DECLINE;
        }
        int cp = b & (0x3F >> count);
        for (int k = 1; k <= count; k++) {
            int c = in[i + k] & 0xFF;
            if ((c & 0xC0) != 0x80) {
                throw DECLINE;
            }
            cp = cp << 6 | c & 0x3F;
        }
        if (cp < min || cp > 0x10FFFF || cp >= 0xD800 && cp <= 0xDFFF) {
            throw DECLINE;
        }
        return i + count + 1;
    }

    /**
     * A string with escapes, from {@code start} (after its opening quote), decoded into the scratch bytes {@link #text};
     * {@link #pos} is left after its closing quote. The returned count is of those bytes.
     */
    private int unescaped(int start) {
        int i = start;
        int n = 0;
        if (text.length < end - start) { // an escape is never shorter decoded than written
            text = new byte[Math.max(end - start, 2 * text.length)];
        }
        byte[] out = text;
        while (true) {
            int run = plainRun(i);
            System.arraycopy(in, i, out, n, run - i);
            n += run - i;
            if (run >= end) {
                throw DECLINE;
            }
            if (in[run] == '"') {
                pos = run + 1;
                return n;
            }
            if (run + 1 >= end) {
                throw DECLINE;
            }
            byte e = in[run + 1];
            i = run + 2;
            switch (e) {
                case '"', '\\', '/' -> out[n++] = e;
                case 'b' -> out[n++] = '\b';
                case 'f' -> out[n++] = '\f';
                case 'n' -> out[n++] = '\n';
                case 'r' -> out[n++] = '\r';
                case 't' -> out[n++] = '\t';
                case 'u' -> {
                    int c = hex4(i);
                    i += 4;
                    if (c >= 0xD800 && c <= 0xDBFF) { // a surrogate pair, or declined (the parser decides)
                        if (i + 6 > end || in[i] != '\\' || in[i + 1] != 'u') {
                            throw DECLINE;
                        }
                        int low = hex4(i + 2);
                        if (low < 0xDC00 || low > 0xDFFF) {
                            throw DECLINE;
                        }
                        i += 6;
                        c = Character.toCodePoint((char) c, (char) low);
                    } else if (c >= 0xDC00 && c <= 0xDFFF) {
                        throw DECLINE;
                    }
                    n = utf8(out, n, c);
                }
                default -> throw DECLINE;
            }
        }
    }

    private int hex4(int at) {
        if (at + 4 > end) {
            throw DECLINE;
        }
        int value = 0;
        for (int k = 0; k < 4; k++) {
            int d = Character.digit(in[at + k], 16);
            if (d < 0) {
                throw DECLINE;
            }
            value = value << 4 | d;
        }
        return value;
    }

    private static int utf8(byte[] out, int n, int cp) {
        if (cp < 0x80) {
            out[n++] = (byte) cp;
        } else if (cp < 0x800) {
            out[n++] = (byte) (0xC0 | cp >> 6);
            out[n++] = (byte) (0x80 | cp & 0x3F);
        } else if (cp < 0x10000) {
            out[n++] = (byte) (0xE0 | cp >> 12);
            out[n++] = (byte) (0x80 | cp >> 6 & 0x3F);
            out[n++] = (byte) (0x80 | cp & 0x3F);
        } else {
            out[n++] = (byte) (0xF0 | cp >> 18);
            out[n++] = (byte) (0x80 | cp >> 12 & 0x3F);
            out[n++] = (byte) (0x80 | cp >> 6 & 0x3F);
            out[n++] = (byte) (0x80 | cp & 0x3F);
        }
        return n;
    }

    /** created_at: an ISO-8601 string without escapes, or whole epoch milliseconds. */
    private long timestamp() {
        if (peek() != '"') {
            return CreatedAt.ofMillis(wholeNumber()); // beyond 64-bit microseconds: ArithmeticException, declined
        }
        pos++;
        int start = pos;
        while (pos < end && in[pos] != '"') {
            if (in[pos] < 0x20 || in[pos] == '\\') { // control bytes, escapes and non-ASCII: the parser's
                throw DECLINE;
            }
            pos++;
        }
        if (pos == end) {
            throw DECLINE;
        }
        String text = new String(in, start, pos - start, StandardCharsets.ISO_8859_1);
        pos++;
        try {
            return CreatedAt.ofIso(text);
        } catch (DateTimeException e) {
            throw DECLINE;
        }
    }

    private void intArray(int position) {
        int n = 0;
        int[] items = ints;
        if (!emptyArray()) {
            do {
                skipSpace();
                long value = wholeNumber();
                if (!WholeNumbers.fitsInt(value)) {
                    throw DECLINE;
                }
                if (n == items.length) {
                    items = ints = Arrays.copyOf(items, 2 * n);
                }
                items[n++] = (int) value;
            } while (!endOfItem(']'));
        }
        row.ints(position, items, n);
    }

    private void floatArray(int position) {
        int n = 0;
        float[] items = floats;
        if (!emptyArray()) {
            do {
                skipSpace();
                float value = floatNumber();
                if (n == items.length) {
                    items = floats = Arrays.copyOf(items, 2 * n);
                }
                items[n++] = value;
            } while (!endOfItem(']'));
        }
        row.floats(position, items, n);
    }

    /** Past an array's opening bracket: true, past its closing one too, when it holds nothing. */
    private boolean emptyArray() {
        expect('[');
        skipSpace();
        if (peek() == ']') {
            pos++;
            return true;
        }
        return false;
    }

    /** After an item: true at the closing {@code close} (consumed), false at a comma (consumed). */
    private boolean endOfItem(char close) {
        skipSpace();
        byte b = next();
        if (b == close) {
            return true;
        }
        if (b != ',') {
            throw DECLINE;
        }
        return false;
    }

    /**
     * metadata: an object whose values are strings, numbers (their JSON text) or booleans; entries in their order,
     * a repeated key as often as it comes, as the parser writes them.
     */
    private void stringMap(int position) {
        expect('{');
        int entries = 0;
        skipSpace();
        if (peek() == '}') {
            pos++;
        } else {
            while (true) {
                skipSpace();
                int keyStart = pos;
                skipString();
                int keyEnd = pos;
                if (keyEnd - keyStart - 2 > MAX_NAME_BYTES) { // the raw bytes: never fewer than the name's
                    throw DECLINE;
                }
                skipSpace();
                expect(':');
                skipSpace();
                int valueStart = pos;
                byte b = peek();
                if (b == '"') {
                    skipString();
                } else if (b == 't') {
                    literal("true");
                } else if (b == 'f') {
                    literal("false");
                } else {
                    floatNumber(); // a number in JSON's grammar, kept as its text
                }
                if (spans.length < 4 * (entries + 1)) {
                    spans = Arrays.copyOf(spans, spans.length * 2);
                }
                spans[4 * entries] = keyStart;
                spans[4 * entries + 1] = keyEnd;
                spans[4 * entries + 2] = valueStart;
                spans[4 * entries + 3] = pos;
                entries++;
                if (endOfItem('}')) {
                    break;
                }
            }
        }
        int after = pos;
        row.mapStart(position, entries);
        for (int k = 0; k < 2 * entries; k++) {
            int start = spans[2 * k];
            if (in[start] == '"') {
                pos = start;
                string();
            } else { // a number's or boolean's text
                stringBytes = in;
                stringStart = start;
                stringLength = spans[2 * k + 1] - start;
            }
            if (k % 2 == 0) {
                row.mapKey(stringBytes, stringStart, stringLength);
            } else {
                row.mapValue(stringBytes, stringStart, stringLength);
            }
        }
        row.mapEnd();
        pos = after;
    }

    /** Moves past a well-formed string (escapes checked by decoding them). */
    private void skipString() {
        expect('"');
        int close = plainRun(pos);
        if (close < end && in[close] == '"') {
            pos = close + 1;
        } else {
            unescaped(pos);
        }
    }

    /**
     * A whole number in JSON's grammar that fits 63 bits and is written without a fraction or exponent (3.0 and 3e0
     * are whole to the parser too, but rare: declined).
     */
    private long wholeNumber() {
        boolean negative = peek() == '-';
        if (negative) {
            pos++;
        }
        int digits = pos;
        long value = 0;
        while (pos < end && in[pos] >= '0' && in[pos] <= '9') {
            value = value * 10 + (in[pos++] - '0');
        }
        int count = pos - digits;
        if (count == 0 || count > 18 || count > 1 && in[digits] == '0') {
            throw DECLINE;
        }
        if (pos < end && (in[pos] == '.' || in[pos] == 'e' || in[pos] == 'E')) {
            throw DECLINE;
        }
        return negative ? -value : value;
    }

    private static final double[] POWERS_OF_TEN = new double[23];

    static {
        double p = 1;
        for (int i = 0; i < POWERS_OF_TEN.length; i++) {
            POWERS_OF_TEN[i] = p;
            p *= 10;
        }
    }

    /**
     * A JSON number as {@link Float#parseFloat} reads its text (correctly rounded). Up to 15 significant digits and
     * a power of ten up to 22: the double m / 10^k is exact-rounded, and rounding it to float is too unless it lies
     * exactly halfway between two floats (then, and for longer numbers, the JDK's parser decides).
     */
    private float floatNumber() {
        int start = pos;
        boolean negative = peek() == '-';
        if (negative) {
            pos++;
        }
        int intStart = pos;
        long mantissa = 0;
        int digits = 0;
        while (pos < end && in[pos] >= '0' && in[pos] <= '9') {
            mantissa = mantissa * 10 + (in[pos++] - '0');
            digits++;
        }
        int intDigits = pos - intStart;
        if (intDigits == 0 || intDigits > 1 && in[intStart] == '0') {
            throw DECLINE;
        }
        int scale = 0;
        if (pos < end && in[pos] == '.') {
            pos++;
            int fracStart = pos;
            while (pos < end && in[pos] >= '0' && in[pos] <= '9') {
                mantissa = mantissa * 10 + (in[pos++] - '0');
                digits++;
            }
            scale = pos - fracStart;
            if (scale == 0) {
                throw DECLINE;
            }
        }
        int exponent = 0;
        boolean hasExponent = pos < end && (in[pos] == 'e' || in[pos] == 'E');
        if (hasExponent) {
            pos++;
            boolean negativeExponent = false;
            if (pos < end && (in[pos] == '+' || in[pos] == '-')) {
                negativeExponent = in[pos++] == '-';
            }
            int expStart = pos;
            while (pos < end && in[pos] >= '0' && in[pos] <= '9' && pos - expStart < 4) {
                exponent = exponent * 10 + (in[pos++] - '0');
            }
            if (pos == expStart || pos < end && in[pos] >= '0' && in[pos] <= '9') {
                throw DECLINE;
            }
            if (negativeExponent) {
                exponent = -exponent;
            }
        }
        if (pos - start > MAX_NUMBER_CHARS) {
            throw DECLINE;
        }
        if (scale == 0 && !hasExponent && intDigits <= 18) {
            return (float) (negative ? -mantissa : mantissa); // a whole number: the parser's long, rounded once
        }
        int power = exponent - scale;
        if (digits <= 15 && power >= -22 && power <= 22) {
            double d = power < 0 ? mantissa / POWERS_OF_TEN[-power] : mantissa * POWERS_OF_TEN[power];
            float f = (float) d;
            if (f == d || !halfway(d, f)) {
                return negative ? -f : f;
            }
        }
        // the number's bytes are ASCII (its grammar checked above): Latin-1 reads them as its characters
        return Float.parseFloat(new String(in, start, pos - start, StandardCharsets.ISO_8859_1));
    }

    /** Whether {@code d} lies exactly halfway between {@code f} (its rounding) and the float beyond it. */
    private static boolean halfway(double d, float f) {
        float other = d > f ? Math.nextUp(f) : Math.nextDown(f);
        return d == ((double) f + (double) other) / 2;
    }

    private boolean bool() {
        if (peek() == 't') {
            literal("true");
            return true;
        }
        literal("false");
        return false;
    }

    private void literal(String word) {
        if (pos + word.length() > end) {
            throw DECLINE;
        }
        for (int k = 0; k < word.length(); k++) {
            if (in[pos + k] != word.charAt(k)) {
                throw DECLINE;
            }
        }
        pos += word.length();
        if (pos < end && (Character.isLetterOrDigit(in[pos]) || in[pos] == '_')) {
            throw DECLINE; // "nullx", "true1": the parser's to refuse
        }
    }

    private void skipSpace() {
        while (pos < end) {
            byte b = in[pos];
            if (b != ' ' && b != '\n' && b != '\r' && b != '\t') {
                return;
            }
            pos++;
        }
    }

    private byte peek() {
        if (pos >= end) {
            throw DECLINE;
        }
        return in[pos];
    }

    private byte next() {
        byte b = peek();
        pos++;
        return b;
    }

    private void expect(char c) {
        if (next() != c) {
            throw DECLINE;
        }
    }
}
