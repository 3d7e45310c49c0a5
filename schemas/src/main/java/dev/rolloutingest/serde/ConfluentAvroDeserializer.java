package dev.rolloutingest.serde;

import dev.rolloutingest.schemas.AvroContracts;
import java.io.IOException;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.AvroTypeException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.ResolvingDecoder;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Reads Confluent wire-format bytes. The writer schema comes from the registry by id; the reader
 * schema is the target class's (specific) or the writer's own (generic), so an old producer's record
 * is read with the new schema through Avro's resolution rules.
 */
public class ConfluentAvroDeserializer<T> implements Deserializer<T>, FieldsDeserializer {
    static {
        AvroContracts.trust();
    }

    private SchemaRegistryClient registry;
    private Class<T> type;
    private Schema readerSchema;
    private SpecificData specificData;
    private boolean specific;
    private final Map<Integer, Reading> readers = new ConcurrentHashMap<>();
    private volatile UnknownFieldsListener unknownFields = (id, fields) -> {};
    private volatile boolean keepAddedFields;
    private volatile UnknownFieldsListener addedFields = (id, fields) -> {};

    /** Told of every record whose writer schema has fields the reader schema lacks: Avro resolution drops them. */
    @FunctionalInterface
    public interface UnknownFieldsListener {
        void dropped(int schemaId, List<String> fields);
    }

    /**
     * A reader for one writer schema id, and the writer's fields the reader does not have. {@code writer} and
     * {@code target} are null for generic reading; {@code sameSchema}, compared once here (a schema comparison
     * per record was a fifth of the ingest thread), says the bytes can be read without resolution.
     */
    private record Reading(
            DatumReader<Object> reader,
            List<String> droppedFields,
            Schema writer,
            Schema target,
            boolean sameSchema,
            Schema.Field[] targetFields) {
        Reading(DatumReader<Object> reader, List<String> droppedFields, Schema writer, Schema target) {
            this(
                    reader,
                    droppedFields,
                    writer,
                    target,
                    writer != null && writer.equals(target),
                    target == null ? null : target.getFields().toArray(new Schema.Field[0]));
        }
    }

    /** One thread's reusable decoders: a resolving decoder costs a grammar to build, so one per writer schema. */
    private static final class ThreadDecoders {
        BinaryDecoder binary;
        final Map<Reading, ResolvingDecoder> resolving = new IdentityHashMap<>();
    }

    private final ThreadLocal<ThreadDecoders> threadDecoders = ThreadLocal.withInitial(ThreadDecoders::new);

    /** Reads a record's body from a decoder positioned at its first byte, with this thread's decoders. */
    @FunctionalInterface
    private interface Body<R> {
        R read(Reading reading, ThreadDecoders decoders, BinaryDecoder in) throws IOException;
    }

    /**
     * Whether {@link #deserializeFields} passes on the fields a writer schema has beyond the reader's (a producer's
     * newer schema) instead of dropping them: they come after the reader's fields, their {@code pos()} at or above
     * the reader's field count. Off by default (Avro's resolution drops them, the listener is told). Set before the
     * first record.
     */
    public ConfluentAvroDeserializer<T> keepingAddedFields(boolean keep) {
        this.keepAddedFields = keep;
        return this;
    }

    /** Told once per writer schema id whose added fields {@link #keepingAddedFields} passes on; returns this. */
    public ConfluentAvroDeserializer<T> onAddedFields(UnknownFieldsListener listener) {
        this.addedFields = listener;
        return this;
    }

    /** Registers the listener for records whose fields are dropped by schema resolution; returns this. */
    public ConfluentAvroDeserializer<T> onUnknownFields(UnknownFieldsListener listener) {
        this.unknownFields = listener;
        return this;
    }

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
        return decode(
                topic, bytes, (reading, decoders, in) -> (T) reading.reader().read(null, in));
    }

    /**
     * Field by field into the caller's structures: for the common case of a writer schema equal to the reader's,
     * straight off the bytes; otherwise through Avro's resolving decoder (defaults filled in, promotions made,
     * the writer's extra fields skipped), exactly the resolution {@link #deserialize} applies.
     */
    @Override
    public <R> R deserializeFields(String topic, byte[] bytes, FieldReader<R> fields) {
        if (readerSchema == null) {
            throw new IllegalStateException("Reading field by field needs a reader schema: construct with a class");
        }
        return decode(topic, bytes, (reading, decoders, in) -> {
            if (reading.sameSchema()) {
                // the target's fields: the reader's, or with the added fields a newer writer has (keepingAddedFields)
                return fields.read(in, reading.targetFields());
            }
            ResolvingDecoder resolving = decoders.resolving.get(reading);
            if (resolving == null) {
                resolving = DecoderFactory.get().resolvingDecoder(reading.writer(), reading.target(), in);
                decoders.resolving.put(reading, resolving);
            }
            resolving.configure(in);
            R value = fields.read(resolving, resolving.readFieldOrder());
            resolving.drain();
            return value;
        });
    }

    private <R> R decode(String topic, byte[] bytes, Body<R> body) {
        int id = WireFormat.schemaId(topic, bytes);
        Reading reading = readers.computeIfAbsent(id, this::readerFor);
        ThreadDecoders decoders = threadDecoders.get();
        BinaryDecoder decoder = DecoderFactory.get()
                .binaryDecoder(
                        bytes, WireFormat.HEADER_LENGTH, bytes.length - WireFormat.HEADER_LENGTH, decoders.binary);
        decoders.binary = decoder;
        try {
            R value = body.read(reading, decoders, decoder);
            if (!decoder.isEnd()) {
                throw new SerdeException.InvalidWireFormat(
                        "trailing-bytes",
                        "Record on topic '" + topic + "' has bytes left after decoding schema id " + id
                                + ": corrupt or not written with that schema");
            }
            if (!reading.droppedFields().isEmpty()) {
                unknownFields.dropped(id, reading.droppedFields());
            }
            return value;
        } catch (AvroTypeException e) {
            throw new SerdeException.IncompatibleSchema(
                    "Record on topic '" + topic + "' written with schema id " + id
                            + " cannot be read with reader schema: " + e.getMessage(),
                    e);
        } catch (IOException
                | AvroRuntimeException
                | IndexOutOfBoundsException
                | NegativeArraySizeException
                | UnsupportedOperationException e) {
            // Avro refuses a length or count past its limits (SystemLimitException) with UnsupportedOperationException
            throw new SerdeException.InvalidWireFormat(
                    "not-avro",
                    "Record on topic '" + topic + "' is truncated or not Avro for schema id " + id + ": " + e,
                    e);
        }
    }

    /** The reader schema with the writer's added fields after its own (copies: Avro fields belong to one schema). */
    private static Schema withAddedFields(Schema reader, Schema writer, List<String> added) {
        List<Schema.Field> fields = new java.util.ArrayList<>();
        reader.getFields().forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        added.forEach(name -> {
            Schema.Field f = writer.getField(name);
            fields.add(new Schema.Field(f, f.schema()));
        });
        Schema evolved = Schema.createRecord(reader.getName(), reader.getDoc(), reader.getNamespace(), false, fields);
        reader.getAliases().forEach(evolved::addAlias);
        return evolved;
    }

    private Reading readerFor(int id) {
        Schema writer = registry.byId(id);
        Schema reader = readerSchema;
        SpecificData data = specificData == null ? SpecificData.get() : specificData;
        if (reader == null && specific) {
            Class<?> generated = data.getClass(writer);
            reader = generated == null ? writer : data.getSchema(generated);
        }
        if (reader == null) {
            return new Reading(new GenericDatumReader<>(writer), List.of(), null, null);
        }
        Schema target = reader;
        List<String> dropped = writer.getType() == Schema.Type.RECORD && target.getType() == Schema.Type.RECORD
                ? writer.getFields().stream()
                        .map(Schema.Field::name)
                        .filter(name -> target.getField(name) == null)
                        .toList()
                : List.of();
        // Resolution errors show at construction for some mismatches and at read time for others.
        try {
            DatumReader<Object> datumReader = specific
                    ? new SpecificDatumReader<>(writer, reader, data)
                    : new GenericDatumReader<>(writer, reader);
            if (keepAddedFields && !dropped.isEmpty()) {
                Reading reading = new Reading(datumReader, List.of(), writer, withAddedFields(reader, writer, dropped));
                addedFields.dropped(id, dropped);
                return reading;
            }
            return new Reading(datumReader, dropped, writer, reader);
        } catch (AvroRuntimeException e) {
            throw new SerdeException.IncompatibleSchema(
                    "Schema id " + id + " cannot be resolved to reader schema " + reader.getFullName() + ": "
                            + e.getMessage(),
                    e);
        }
    }
}
