package dev.rolloutingest.serde.values;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.FieldReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.util.Utf8;

/** A row as the batch's reader sees it: each field read by its reader schema into plain Java, by name. */
final class Rows {
    /** The fields added beyond the contract, as the reader was handed them. */
    static final List<Schema.Field> lastAdded = new ArrayList<>();

    static final FieldReader<Map<String, Object>> READER = (in, order) -> {
        Map<String, Object> row = new LinkedHashMap<>();
        lastAdded.clear();
        for (Schema.Field field : order) {
            if (row.containsKey(field.name())) {
                throw new IllegalStateException("field " + field.name() + " twice in the order");
            }
            if (field.pos() >= ContractField.ALL.length) {
                lastAdded.add(field);
            }
            row.put(field.name(), plain(new GenericDatumReader<>(field.schema()).read(null, in)));
        }
        return new TreeMap<>(row);
    };

    /** The same Rollout read from its Avro encoding: what every format must equal. */
    static Map<String, Object> avro(Rollout rollout) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<>(Rollout.class).write(rollout, encoder);
        encoder.flush();
        return READER.read(
                DecoderFactory.get().binaryDecoder(out.toByteArray(), null),
                Rollout.getClassSchema().getFields().toArray(new Schema.Field[0]));
    }

    static Object plain(Object value) {
        if (value instanceof Utf8 || value instanceof CharSequence) {
            return value.toString();
        }
        if (value instanceof ByteBuffer b) {
            byte[] bytes = new byte[b.remaining()];
            b.duplicate().get(bytes);
            return HexFormat.of().formatHex(bytes);
        }
        if (value instanceof List<?> list) {
            return list.stream().map(Rows::plain).toList();
        }
        if (value instanceof Map<?, ?> map) {
            Map<String, Object> copy = new TreeMap<>();
            map.forEach((k, v) -> copy.put(k.toString(), plain(v)));
            return copy;
        }
        if (value instanceof org.apache.avro.generic.GenericRecord record) {
            Map<String, Object> copy = new TreeMap<>();
            record.getSchema().getFields().forEach(f -> copy.put(f.name(), plain(record.get(f.name()))));
            return copy;
        }
        return value;
    }

    private Rows() {}
}
