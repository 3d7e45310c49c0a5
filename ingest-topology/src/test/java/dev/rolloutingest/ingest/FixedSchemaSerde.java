package dev.rolloutingest.ingest;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.FieldsDeserializer;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.WireFormat;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Confluent wire format with fixed schema ids instead of a registry, for TopologyTestDriver tests:
 * Rollout is id 1, GenerationSealed id 2; any other id is unknown. Integration tests use the real registry.
 */
final class FixedSchemaSerde {
    static final int ROLLOUT_ID = 1;
    static final int SEALED_ID = 2;

    static {
        dev.rolloutingest.schemas.AvroContracts.trust();
    }

    private FixedSchemaSerde() {}

    static byte[] frame(int id, SpecificRecord record) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
            new SpecificDatumWriter<SpecificRecord>(record.getSchema()).write(record, encoder);
            encoder.flush();
            return WireFormat.frame(id, out.toByteArray());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static byte[] rollout(Rollout rollout) {
        return frame(ROLLOUT_ID, rollout);
    }

    /** Field by field, as the topology decodes: the bytes must be the Rollout schema (id 1) exactly. */
    static FieldsDeserializer rollouts() {
        Schema.Field[] fields = Rollout.getClassSchema().getFields().toArray(new Schema.Field[0]);
        return new FieldsDeserializer() {
            @Override
            public <R> R deserializeFields(String topic, byte[] bytes, FieldReader<R> reader) {
                int id = WireFormat.schemaId(topic, bytes);
                if (id != ROLLOUT_ID) {
                    throw new SerdeException.UnknownSchemaId(id, "schema id " + id + " unknown");
                }
                try {
                    BinaryDecoder in = DecoderFactory.get().binaryDecoder(bytes, 5, bytes.length - 5, null);
                    R value = reader.read(in, fields);
                    if (!in.isEnd()) {
                        throw new SerdeException.InvalidWireFormat("trailing-bytes", "bytes left after the record");
                    }
                    return value;
                } catch (IOException | AvroRuntimeException | IndexOutOfBoundsException e) {
                    throw new SerdeException.InvalidWireFormat("not-avro", "not Avro: " + e, e);
                }
            }
        };
    }

    static Serializer<GenerationSealed> sealedEvents() {
        return (topic, event) -> frame(SEALED_ID, event);
    }

    static Deserializer<GenerationSealed> sealedEventsReader() {
        return (topic, bytes) -> decode(topic, bytes, SEALED_ID, new SpecificDatumReader<>(GenerationSealed.class));
    }

    private static <T> T decode(String topic, byte[] bytes, int expectedId, SpecificDatumReader<T> reader) {
        int id = WireFormat.schemaId(topic, bytes);
        if (id != expectedId) {
            throw new SerdeException.UnknownSchemaId(id, "schema id " + id + " unknown");
        }
        try {
            return reader.read(null, DecoderFactory.get().binaryDecoder(bytes, 5, bytes.length - 5, null));
        } catch (IOException | RuntimeException e) {
            throw new SerdeException.InvalidWireFormat("not-avro", "not Avro: " + e, e);
        }
    }
}
