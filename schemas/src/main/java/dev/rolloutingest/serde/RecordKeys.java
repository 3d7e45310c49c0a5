package dev.rolloutingest.serde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DynamicMessage;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;

/**
 * The record_id a Kafka record's key carries, in the forms producers send it: a plain UTF-8 string (Kafka's
 * StringSerializer), or the Confluent wire format (magic byte 0, 4-byte schema id) as Confluent's Avro, JSON Schema
 * and Protobuf serializers and Kafka Connect's converters write it: a string, or a record/object/message with a
 * {@code record_id} field. A framed key's schema comes from the registry and is made into a reader once per schema
 * id (a bounded cache); a Protobuf key is read through its schema's descriptors, the message its indexes name,
 * whichever form the schema was registered in. A registry that cannot answer is thrown as such
 * ({@link SerdeException#recordsFault()} false), so the record waits rather than being dead-lettered.
 */
public final class RecordKeys {
    /** The field a structured key carries the record_id in. */
    public static final String KEY_FIELD = "record_id";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final SchemaRegistryClient registry;
    private final Map<Integer, KeyReader> readers;

    /** @param cacheCapacity how many schema ids keep their key reader */
    public RecordKeys(SchemaRegistryClient registry, int cacheCapacity) {
        this.registry = registry;
        this.readers = Collections.synchronizedMap(new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Integer, KeyReader> eldest) {
                return size() > cacheCapacity;
            }
        });
    }

    /** A key that cannot carry a record_id: its bytes or schema are of a form this decoder does not read. */
    public static final class UnreadableKey extends SerdeException {
        public UnreadableKey(String message, Throwable cause) {
            super("key-unreadable", message, cause);
        }
    }

    /** Reads the record_id of a framed key of one schema id. */
    @FunctionalInterface
    private interface KeyReader {
        String recordId(byte[] key);
    }

    /**
     * The record_id of a key; null for a record without a key.
     *
     * @throws UnreadableKey when a framed key is neither a string nor a structure with a string record_id
     * @throws SerdeException from the registry (an unknown schema id is the record's fault; an outage is not)
     */
    public String recordId(String topic, byte[] key) {
        if (key == null) {
            return null;
        }
        if (key.length <= WireFormat.HEADER_LENGTH || key[0] != WireFormat.MAGIC_BYTE) {
            return utf8(key);
        }
        int schemaId = WireFormat.schemaId(topic, key);
        KeyReader reader = readers.get(schemaId);
        if (reader == null) {
            reader = readerOf(schemaId, registry.typedById(schemaId));
            readers.put(schemaId, reader);
        }
        return reader.recordId(key);
    }

    /** The reader of a schema's keys; a schema that cannot be read gives a reader that says why, for each key. */
    private static KeyReader readerOf(int schemaId, SchemaRegistryClient.TypedSchema schema) {
        try {
            return switch (schema.type()) {
                case "AVRO" -> avro(schemaId, schema.text());
                case "JSON" -> key -> json(schemaId, key);
                case "PROTOBUF" -> protobuf(schemaId, schema.text());
                default -> throw new UnreadableKey(
                        "Key with schema id " + schemaId + " has schema type " + schema.type()
                                + ", which keys cannot use here (AVRO, JSON or PROTOBUF)",
                        null);
            };
        } catch (SerdeException e) {
            String why = e instanceof UnreadableKey ? e.getMessage() : "Key with schema id " + schemaId + ": " + e;
            return key -> {
                throw new UnreadableKey(why, null);
            };
        }
    }

    private static KeyReader avro(int schemaId, String text) {
        Schema schema;
        try {
            schema = new Schema.Parser().parse(text);
        } catch (RuntimeException e) {
            throw new UnreadableKey("Key schema " + schemaId + " is not a readable Avro schema: " + e.getMessage(), e);
        }
        GenericDatumReader<Object> reader = new GenericDatumReader<>(schema);
        return key -> {
            try {
                BinaryDecoder decoder = DecoderFactory.get()
                        .binaryDecoder(key, WireFormat.HEADER_LENGTH, key.length - WireFormat.HEADER_LENGTH, null);
                Object value = reader.read(null, decoder);
                if (!decoder.isEnd()) {
                    throw new UnreadableKey("Key with Avro schema " + schemaId + " has bytes after its value", null);
                }
                if (value instanceof CharSequence string) {
                    return string.toString();
                }
                if (value instanceof GenericRecord record
                        && record.getSchema().getField(KEY_FIELD) != null
                        && record.get(KEY_FIELD) instanceof CharSequence id) {
                    return id.toString();
                }
                throw new UnreadableKey(
                        "Key with Avro schema " + schemaId + " is a " + schema.getType()
                                + ", neither a string nor a record with a string field " + KEY_FIELD,
                        null);
            } catch (UnreadableKey unreadable) {
                throw unreadable;
            } catch (IOException | RuntimeException e) {
                throw new UnreadableKey("Key with Avro schema " + schemaId + " cannot be decoded: " + e, e);
            }
        };
    }

    private static String json(int schemaId, byte[] key) {
        JsonNode value;
        try {
            value = JSON.readTree(key, WireFormat.HEADER_LENGTH, key.length - WireFormat.HEADER_LENGTH);
        } catch (IOException e) {
            throw new UnreadableKey("Key with JSON schema " + schemaId + " is not JSON: " + e.getMessage(), e);
        }
        if (value != null && value.isTextual()) {
            return value.asText();
        }
        if (value != null && value.path(KEY_FIELD).isTextual()) {
            return value.path(KEY_FIELD).asText();
        }
        throw new UnreadableKey(
                "Key with JSON schema " + schemaId + " is neither a string nor an object with a string " + KEY_FIELD,
                null);
    }

    /**
     * Confluent's Protobuf framing: after the header, the message indexes ({@link MessageIndexes}), then the message,
     * read as protobuf-java reads it (the last value of the field wins, unknown fields are skipped). The record_id is
     * the message's string field named {@code record_id}; unset, it is "" (proto3 leaves an empty string out).
     */
    private static KeyReader protobuf(int schemaId, String text) {
        Descriptors.FileDescriptor file = ProtoSchemas.file(schemaId, text);
        return key -> {
            MessageIndexes indexes = new MessageIndexes();
            indexes.read(schemaId, key);
            Descriptors.Descriptor message = ProtoSchemas.message(schemaId, file, indexes.indexes());
            Descriptors.FieldDescriptor field = message.findFieldByName(KEY_FIELD);
            if (field == null
                    || field.isRepeated()
                    || field.getJavaType() != Descriptors.FieldDescriptor.JavaType.STRING) {
                throw new UnreadableKey(
                        "Key with Protobuf schema " + schemaId + ": message " + message.getFullName()
                                + " has no field 'string " + KEY_FIELD + "'",
                        null);
            }
            try {
                return (String) DynamicMessage.newBuilder(message)
                        .mergeFrom(CodedInputStream.newInstance(
                                key, indexes.messageStart(), key.length - indexes.messageStart()))
                        .buildPartial()
                        .getField(field);
            } catch (IOException | RuntimeException e) {
                throw new UnreadableKey("Key with Protobuf schema " + schemaId + " cannot be decoded: " + e, e);
            }
        };
    }

    private static String utf8(byte[] bytes) {
        try {
            StrictUtf8.check(bytes, 0, bytes.length);
        } catch (CharacterCodingException e) {
            throw new UnreadableKey(
                    "Key of " + bytes.length + " bytes is neither UTF-8 text nor Confluent wire format", e);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
