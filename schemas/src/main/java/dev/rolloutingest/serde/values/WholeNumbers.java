package dev.rolloutingest.serde.values;

/**
 * The range checks of whole numbers, the same for JSON and Protobuf values: what fits the contract's int and long
 * fields, and which doubles are whole numbers. Protobuf's unsigned 64-bit values (uint64, fixed64) come as a long's
 * bits, so one above 2^63 - 1 is negative here; its error names the unsigned value the producer sent.
 */
final class WholeNumbers {
    static final String WITHIN_32_BITS = "a whole number within 32 bits";
    static final String WITHIN_64_BITS = "a whole number within 64 bits";

    private WholeNumbers() {}

    static boolean fitsInt(long value) {
        return value >= Integer.MIN_VALUE && value <= Integer.MAX_VALUE;
    }

    /** A whole double that a long holds exactly: below 2^53 every integer is a double, above it some are skipped. */
    static boolean isWhole(double d) {
        return d == Math.rint(d) && Math.abs(d) < 0x1p53;
    }

    /**
     * {@code value} as an int, wrong-type naming {@code field} when it needs more than 32 bits.
     *
     * @param unsigned whether {@code value} is the bits of an unsigned 64-bit number
     */
    static int toInt(String field, long value, boolean unsigned) {
        return toInt(field, -1, value, unsigned);
    }

    /** As {@link #toInt(String, long, boolean)} for item {@code item} (-1: none) of an array field. */
    static int toInt(String field, int item, long value, boolean unsigned) {
        boolean beyondLong = unsigned && value < 0;
        if (!fitsInt(value) || beyondLong) {
            // the item's name is made here only: arrays of tokens check every value
            throw ValueErrors.wrongType(
                    item < 0 ? field : field + "[" + item + "]",
                    WITHIN_32_BITS,
                    beyondLong ? Long.toUnsignedString(value) : Long.toString(value));
        }
        return (int) value;
    }

    /** {@code value} as a long, wrong-type naming {@code field} for an unsigned one above 2^63 - 1. */
    static long toLong(String field, long value, boolean unsigned) {
        if (unsigned && value < 0) {
            throw ValueErrors.wrongType(field, WITHIN_64_BITS, Long.toUnsignedString(value));
        }
        return value;
    }
}
