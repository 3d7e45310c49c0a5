package dev.rolloutingest.serde;

import java.io.IOException;
import org.apache.avro.Schema;
import org.apache.avro.io.Decoder;

/**
 * Reads one record field by field into the caller's own structures, with no Avro objects in between (no
 * Strings, boxed lists or maps built only to be copied again).
 */
@FunctionalInterface
public interface FieldReader<R> {
    /**
     * Reads every field of one record of the reader schema from {@code in}, in the order given: {@code order}
     * holds the reader schema's fields (their {@code pos()} names the field), in the order their values come.
     */
    R read(Decoder in, Schema.Field[] order) throws IOException;

    /**
     * Where a decoder that reads the contract's fields off its own bytes may write them straight, with no encoding in
     * between; null (the default) to read every value through {@link #read}. A decoder that gives a value up half-way
     * reads it again through {@link #read}, which then writes the whole row over what was written.
     */
    default Columns<R> columns() {
        return null;
    }

    /** A row's columns written field by field; {@link #finish} completes the row once all its fields are written. */
    interface Columns<R> extends ContractRow {
        R finish();
    }
}
