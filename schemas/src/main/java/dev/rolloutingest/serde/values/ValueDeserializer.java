package dev.rolloutingest.serde.values;

import com.google.protobuf.Descriptors;
import dev.rolloutingest.serde.ConfluentAvroDeserializer.UnknownFieldsListener;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.FieldsDeserializer;
import dev.rolloutingest.serde.MessageIndexes;
import dev.rolloutingest.serde.ProtoSchemas;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.WireFormat;
import java.io.IOException;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;

/**
 * Reads a Rollout value in the format its topic's setting names ({@link ValueFormats}): Avro through the Avro
 * deserializer, plain JSON, JSON Schema and Protobuf through their decoders, which write the row as the contract's
 * Avro encoding for the same {@link FieldReader}; a JSON value of the contract's fields only is written straight into
 * the reader's {@link FieldReader#columns} when it has them. A value in another format than expected is {@code wrong-format},
 * saying what was expected and what came. The registry is asked for a framed value's schema type and schema once per
 * schema id; a registry that cannot answer is thrown as such ({@link SerdeException#recordsFault()} false): the
 * record waits, it is never dead-lettered for it.
 */
public final class ValueDeserializer implements FieldsDeserializer {
    private final ValueFormats formats;
    private final FieldsDeserializer avro;
    private final SchemaRegistryClient registry;
    private final AddedFields addedFields;
    private final JsonValues json;
    private final int cacheCapacity;
    private final Map<Integer, String> typeById = new ConcurrentHashMap<>();
    private final Map<Integer, Map<String, Schema>> jsonTypesById = new ConcurrentHashMap<>();
    private final Map<Integer, Descriptors.FileDescriptor> protoFileById = new ConcurrentHashMap<>();
    private final Map<Integer, ProtobufPlan> firstMessagePlans = new ConcurrentHashMap<>();
    private final Map<String, ProtobufPlan> nestedMessagePlans = new ConcurrentHashMap<>();
    private final ThreadLocal<PerThread> threads;

    private static final class PerThread {
        final AvroTape tape = new AvroTape();
        final ContractJsonScan jsonScan = new ContractJsonScan();
        final ProtobufValues protobuf;
        final MessageIndexes indexes = new MessageIndexes();

        PerThread(AddedFields added, UnknownFieldsListener unknownProtobufFields) {
            this.protobuf = new ProtobufValues(added, unknownProtobufFields);
        }
    }

    /**
     * @param avro reads Avro values (keeping or dropping their added fields as {@code keepAddedFields} says)
     * @param registry the registry framed values name their schema in
     * @param keepAddedFields fields beyond the contract become columns (true) or are dropped and told (false)
     * @param addedListener told of added fields kept, once per schema id and field (plain JSON: id -1)
     * @param droppedListener told of every record whose added fields are dropped
     * @param unknownProtobufFields told of every Protobuf record with field numbers its schema lacks (skipped, as
     *     Protobuf skips them), each number once as its decimal text
     * @param cacheCapacity schemas, plans and added fields kept per kind (the registry client's capacity)
     */
    public ValueDeserializer(
            ValueFormats formats,
            FieldsDeserializer avro,
            SchemaRegistryClient registry,
            boolean keepAddedFields,
            UnknownFieldsListener addedListener,
            UnknownFieldsListener droppedListener,
            UnknownFieldsListener unknownProtobufFields,
            int cacheCapacity) {
        this.formats = formats;
        this.avro = avro;
        this.registry = registry;
        this.cacheCapacity = cacheCapacity;
        this.addedFields = new AddedFields(keepAddedFields, addedListener, droppedListener, cacheCapacity);
        this.json = new JsonValues(addedFields);
        this.threads = ThreadLocal.withInitial(() -> new PerThread(addedFields, unknownProtobufFields));
    }

    @Override
    public <R> R deserializeFields(String topic, byte[] bytes, FieldReader<R> reader) {
        ValueFormat format = formats.forTopic(topic);
        try {
            return switch (format) {
                case JSON -> plainJson(topic, bytes, reader);
                case AUTO -> framed(bytes) || !startsLikeJson(bytes)
                        ? framedValue(topic, bytes, null, reader)
                        : plainJson(topic, bytes, reader);
                default -> framedValue(topic, bytes, format, reader);
            };
        } catch (SerdeException e) {
            if (e.getClass() == SerdeException.class) { // this package's record faults: say the topic
                throw new SerdeException(
                        e.reason(), "Record on topic '" + topic + "': " + e.getMessage(), e.getCause());
            }
            throw e;
        }
    }

    private <R> R plainJson(String topic, byte[] bytes, FieldReader<R> reader) {
        if (framed(bytes) && !startsLikeJson(bytes)) {
            throw ValueErrors.of(
                    ValueErrors.WRONG_FORMAT,
                    "expected json, got the Confluent wire format (schema id " + WireFormat.schemaId(topic, bytes)
                            + "); set the topic's format to auto or the serializer's");
        }
        return json(bytes, 0, bytes.length, Map.of(), AddedFields.NO_SCHEMA_ID, reader);
    }

    /**
     * A JSON value: scanned straight into the reader's columns when it has them, else onto the tape; a value the scan
     * declines is read by the parser onto the tape (and over whatever the scan had written).
     */
    private <R> R json(
            byte[] bytes, int offset, int length, Map<String, Schema> declared, int id, FieldReader<R> reader) {
        PerThread thread = threads.get();
        FieldReader.Columns<R> columns = reader.columns();
        if (columns == null) {
            json.read(bytes, offset, length, declared, id, thread.tape, thread.jsonScan);
        } else if (thread.jsonScan.read(bytes, offset, length, columns)) {
            return columns.finish();
        } else {
            json.readByParser(bytes, offset, length, declared, id, thread.tape);
        }
        return stage(thread.tape, reader);
    }

    /** A framed value; {@code expected} null reads whatever type its schema has (auto). */
    private <R> R framedValue(String topic, byte[] bytes, ValueFormat expected, FieldReader<R> reader) {
        if (expected != null && !framed(bytes) && startsLikeJson(bytes)) {
            throw ValueErrors.of(
                    ValueErrors.WRONG_FORMAT,
                    "expected " + expected + ", got plain JSON (no magic byte and schema id); set the topic's format"
                            + " to json or auto");
        }
        int id = WireFormat.schemaId(topic, bytes); // bad-magic-byte or truncated for what is not framed
        String type = typeById.get(id);
        if (type == null) {
            type = registry.typedById(id).type();
            bounded(typeById).put(id, type);
        }
        ValueFormat actual =
                switch (type) {
                    case "AVRO" -> ValueFormat.AVRO;
                    case "JSON" -> ValueFormat.JSON_SCHEMA;
                    case "PROTOBUF" -> ValueFormat.PROTOBUF;
                    default -> null;
                };
        if (actual == null || expected != null && actual != expected) {
            throw ValueErrors.of(
                    ValueErrors.WRONG_FORMAT,
                    "expected " + (expected == null ? "avro, json-schema or protobuf" : expected) + ", got "
                            + (actual == null ? "schema type " + type : actual) + " (schema id " + id + ")");
        }
        return switch (actual) {
            case AVRO -> avro.deserializeFields(topic, bytes, reader);
            case JSON_SCHEMA -> {
                Map<String, Schema> declared = jsonTypesById.get(id);
                if (declared == null) {
                    declared = JsonSchemas.addedTypes(id, registry.typedById(id).text());
                    bounded(jsonTypesById).put(id, declared);
                }
                yield json(
                        bytes, WireFormat.HEADER_LENGTH, bytes.length - WireFormat.HEADER_LENGTH, declared, id, reader);
            }
            default -> protobuf(id, bytes, reader);
        };
    }

    private <R> R protobuf(int id, byte[] bytes, FieldReader<R> reader) {
        PerThread thread = threads.get();
        thread.indexes.read(id, bytes);
        ProtobufPlan plan;
        if (thread.indexes.firstMessage()) {
            plan = firstMessagePlans.get(id);
            if (plan == null) {
                plan = plan(id, new int[0]);
                bounded(firstMessagePlans).put(id, plan);
            }
        } else {
            int[] indexes = thread.indexes.indexes();
            String key = id + Arrays.toString(indexes);
            plan = nestedMessagePlans.get(key);
            if (plan == null) {
                plan = plan(id, indexes);
                bounded(nestedMessagePlans).put(key, plan);
            }
        }
        thread.protobuf.read(plan, bytes, thread.indexes.messageStart(), bytes.length, thread.tape);
        return stage(thread.tape, reader);
    }

    private ProtobufPlan plan(int id, int[] indexes) {
        Descriptors.FileDescriptor file = protoFileById.get(id);
        if (file == null) {
            file = ProtoSchemas.file(id, registry.typedById(id).text());
            bounded(protoFileById).put(id, file);
        }
        return ProtobufPlan.of(id, ProtoSchemas.message(id, file, indexes), addedFields);
    }

    /** The row on the tape, read by the same reader an Avro value is. */
    private static <R> R stage(AvroTape tape, FieldReader<R> reader) {
        BinaryDecoder in = tape.decoder();
        try {
            R row = reader.read(in, tape.order());
            if (!in.isEnd()) {
                throw new IllegalStateException("the row's encoding has bytes left after its fields");
            }
            return row;
        } catch (IOException | AvroRuntimeException e) {
            throw new IllegalStateException("a decoded row does not read back: " + e, e);
        }
    }

    private static boolean framed(byte[] bytes) {
        return bytes.length >= WireFormat.HEADER_LENGTH && bytes[0] == WireFormat.MAGIC_BYTE;
    }

    /** A JSON object's first byte, after whitespace and a UTF-8 byte order mark. */
    private static boolean startsLikeJson(byte[] bytes) {
        for (int i = 0; i < bytes.length; i++) {
            byte b = bytes[i];
            if (b == '{') {
                return true;
            }
            boolean bom = i < 3 && (b == (byte) 0xEF || b == (byte) 0xBB || b == (byte) 0xBF);
            if (b != ' ' && b != '\t' && b != '\n' && b != '\r' && !bom) {
                return false;
            }
        }
        return false;
    }

    private <K, V> Map<K, V> bounded(Map<K, V> cache) {
        if (cache.size() >= cacheCapacity) {
            cache.clear();
        }
        return cache;
    }
}
