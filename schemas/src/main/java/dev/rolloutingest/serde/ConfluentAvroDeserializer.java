package dev.rolloutingest.serde;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.AvroTypeException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Reads Confluent wire-format bytes. The writer schema comes from the registry by id; the reader
 * schema is the target class's (specific) or the writer's own (generic), so an old producer's record
 * is read with the new schema through Avro's resolution rules.
 */
public class ConfluentAvroDeserializer<T> implements Deserializer<T> {
    static {
        dev.rolloutingest.schemas.AvroContracts.trust();
    }

    private SchemaRegistryClient registry;
    private Class<T> type;
    private Schema readerSchema;
    private SpecificData specificData;
    private boolean specific;
    private final Map<Integer, DatumReader<Object>> readers = new ConcurrentHashMap<>();

    public ConfluentAvroDeserializer() {}

    /** Reads into a generated class (its schema is the reader schema), or generic records when type is null. */
    public ConfluentAvroDeserializer(SchemaRegistryClient registry, Class<T> type) {
        this.registry = registry;
        this.type = type;
        if (type != null) {
            // The class's own model: Avro 1.12 refuses to load untrusted classes by name.
            this.specificData = SpecificData.getForClass(type);
            this.readerSchema = specificData.getSchema(type);
            this.specific = true;
        }
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        SerdeConfig config = SerdeConfig.from(configs);
        this.registry = new SchemaRegistryClient(config);
        this.specific = config.specificAvroReader() || type != null;
    }

    @Override
    @SuppressWarnings("unchecked")
    public T deserialize(String topic, byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        int id = WireFormat.schemaId(topic, bytes);
        DatumReader<Object> reader = readers.computeIfAbsent(id, this::readerFor);
        BinaryDecoder decoder = DecoderFactory.get().binaryDecoder(bytes, WireFormat.HEADER_LENGTH,
                bytes.length - WireFormat.HEADER_LENGTH, null);
        try {
            Object value = reader.read(null, decoder);
            if (!decoder.isEnd()) {
                throw new SerdeException.InvalidWireFormat("trailing-bytes", "Record on topic '" + topic
                        + "' has bytes left after decoding schema id " + id + ": corrupt or not written with that schema");
            }
            return (T) value;
        } catch (AvroTypeException e) {
            throw new SerdeException.IncompatibleSchema("Record on topic '" + topic + "' written with schema id " + id
                    + " cannot be read with reader schema: " + e.getMessage(), e);
        } catch (IOException | AvroRuntimeException | IndexOutOfBoundsException | NegativeArraySizeException e) {
            throw new SerdeException.InvalidWireFormat("not-avro", "Record on topic '" + topic
                    + "' is truncated or not Avro for schema id " + id + ": " + e, e);
        }
    }

    private DatumReader<Object> readerFor(int id) {
        Schema writer = registry.byId(id);
        Schema reader = readerSchema;
        SpecificData data = specificData == null ? SpecificData.get() : specificData;
        if (reader == null && specific) {
            Class<?> generated = data.getClass(writer);
            reader = generated == null ? writer : data.getSchema(generated);
        }
        if (reader == null) {
            return new GenericDatumReader<>(writer);
        }
        // Resolution errors show at construction for some mismatches and at read time for others.
        try {
            return specific ? new SpecificDatumReader<>(writer, reader, data) : new GenericDatumReader<>(writer, reader);
        } catch (AvroRuntimeException e) {
            throw new SerdeException.IncompatibleSchema("Schema id " + id + " cannot be resolved to reader schema "
                    + reader.getFullName() + ": " + e.getMessage(), e);
        }
    }
}
