package dev.rolloutingest.serde;

/**
 * One row of the Rollout contract written field by field by a decoder that reads the fields off its own bytes (plain
 * JSON's scan), into whatever the row becomes: the contract's Avro encoding, or a batch's columns straight. A field
 * is named by its position in the reader schema ({@code Schema.Field#pos()}); every contract field is written once,
 * in the order the value has them, an absent one as its default. Strings are UTF-8 already checked well-formed.
 */
public interface ContractRow {
    /** A string field's value (nullable or not), {@code utf8[offset, offset + length)}. */
    void string(int field, byte[] utf8, int offset, int length);

    /** A nullable field's null. */
    void nullValue(int field);

    void intValue(int field, int value);

    /** A long or timestamp field's value (created_at in microseconds, policy_version). */
    void longValue(int field, long value);

    void floatValue(int field, float value);

    void booleanValue(int field, boolean value);

    /** An int array's first {@code count} items. */
    void ints(int field, int[] items, int count);

    /** A float array's first {@code count} items. */
    void floats(int field, float[] items, int count);

    /** A bytes field's value (not null). */
    void bytes(int field, byte[] bytes, int offset, int length);

    /** Starts a string map of {@code entries} entries: each a {@link #mapKey} then a {@link #mapValue}, in order. */
    void mapStart(int field, int entries);

    void mapKey(byte[] utf8, int offset, int length);

    void mapValue(byte[] utf8, int offset, int length);

    void mapEnd();
}
