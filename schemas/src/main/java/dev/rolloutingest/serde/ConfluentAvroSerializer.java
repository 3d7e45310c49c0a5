package dev.rolloutingest.serde;

import dev.rolloutingest.schemas.AvroContracts;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.IndexedRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DatumWriter;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Serializes Avro records (specific or generic) in the Confluent wire format, registering or looking up
 * the schema under the TopicNameStrategy subject ({@code <topic>-key} / {@code <topic>-value}).
 */
public class ConfluentAvroSerializer<T extends IndexedRecord> implements Serializer<T> {
    static {
        AvroContracts.trust();
    }

    private SchemaRegistryClient registry;
    private SerdeConfig config;
    private boolean isKey;

    public ConfluentAvroSerializer() {}

    /** For callers outside Kafka's config path (tests, the launcher). */
    public ConfluentAvroSerializer(SchemaRegistryClient registry, SerdeConfig config, boolean isKey) {
        this.registry = registry;
        this.config = config;
        this.isKey = isKey;
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        this.config = SerdeConfig.from(configs);
        this.registry = new SchemaRegistryClient(config);
        this.isKey = isKey;
    }

    @Override
    public byte[] serialize(String topic, T record) {
        if (record == null) {
            return null;
        }
        String subject = topic + (isKey ? "-key" : "-value");
        Schema schema = record.getSchema();
        if (config.useLatestVersion()) {
            SchemaRegistryClient.RegisteredSchema latest = registry.latest(subject);
            byte[] own = encode(schema, record, record instanceof SpecificRecord);
            if (latest.schema().equals(schema)) {
                return WireFormat.frame(latest.id(), own);
            }
            // Re-encode through Avro's schema resolution so the bytes really follow the latest schema.
            Object converted = decode(own, schema, latest.schema(), topic);
            return WireFormat.frame(latest.id(), encode(latest.schema(), converted, false));
        }
        int id = config.autoRegisterSchemas() ? registry.register(subject, schema) : registry.lookup(subject, schema);
        return WireFormat.frame(id, encode(schema, record, record instanceof SpecificRecord));
    }

    private static byte[] encode(Schema schema, Object datum, boolean specific) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
        DatumWriter<Object> writer = specific
                ? new SpecificDatumWriter<>(schema, SpecificData.getForClass(datum.getClass()))
                : new GenericDatumWriter<>(schema);
        try {
            writer.write(datum, encoder);
            encoder.flush();
        } catch (IOException | AvroRuntimeException | ClassCastException | NullPointerException e) {
            throw new SerdeException(
                    "invalid-record",
                    "Record does not match its schema " + schema.getFullName() + ": " + e.getMessage(),
                    e);
        }
        return out.toByteArray();
    }

    private static Object decode(byte[] body, Schema writer, Schema reader, String topic) {
        try {
            return new GenericDatumReader<>(writer, reader, GenericData.get())
                    .read(null, DecoderFactory.get().binaryDecoder(body, null));
        } catch (IOException | AvroRuntimeException e) {
            throw new SerdeException.IncompatibleSchema(
                    "Record schema " + writer.getFullName() + " cannot be written as the latest schema of topic '"
                            + topic + "': " + e.getMessage(),
                    e);
        }
    }
}
