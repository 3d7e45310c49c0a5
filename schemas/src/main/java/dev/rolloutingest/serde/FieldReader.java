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
}
