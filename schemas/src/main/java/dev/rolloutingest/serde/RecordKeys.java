package dev.rolloutingest.serde;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;

/**
 * The record_id a Kafka record's key carries, in the forms producers send it: a plain UTF-8 string (Kafka's
 * StringSerializer), or the Confluent wire format (magic byte 0, 4-byte schema id) as Confluent's Avro, JSON Schema
 * and Protobuf serializers and Kafka Connect's converters write it: a string, or a record/object/message with a
 * {@code record_id} field. A framed key's schema comes from the registry; a registry that cannot answer is thrown
 * as such ({@link SerdeException#recordsFault()} false), so the record waits rather than being dead-lettered.
 */
public final class RecordKeys {
    /** The field a structured key carries the record_id in. */
    public static final String KEY_FIELD = "record_id";

    private static final ObjectMapper JSON = new ObjectMapper();

    /** {@code string record_id = 3;} in a .proto schema; the first message's field is the one read. */
    private static final Pattern PROTO_FIELD =
            Pattern.compile("\\bstring\\s+" + KEY_FIELD + "\\s*=\\s*(\\d+)\\s*[;\\[]");

    private final SchemaRegistryClient registry;

    public RecordKeys(SchemaRegistryClient registry) {
        this.registry = registry;
    }

    /** A key that cannot carry a record_id: its bytes or schema are of a form this decoder does not read. */
    public static final class UnreadableKey extends SerdeException {
        public UnreadableKey(String message, Throwable cause) {
            super("key-unreadable", message, cause);
        }
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
        SchemaRegistryClient.TypedSchema schema = registry.typedById(schemaId);
        ByteBuffer body = ByteBuffer.wrap(key, WireFormat.HEADER_LENGTH, key.length - WireFormat.HEADER_LENGTH);
        return switch (schema.type()) {
            case "AVRO" -> avro(schemaId, schema.text(), body);
            case "JSON" -> json(schemaId, body);
            case "PROTOBUF" -> protobuf(schemaId, schema.text(), body);
            default -> throw new UnreadableKey(
                    "Key with schema id " + schemaId + " has schema type " + schema.type()
                            + ", which keys cannot use here (AVRO, JSON or PROTOBUF)",
                    null);
        };
    }

    private static String avro(int schemaId, String text, ByteBuffer body) {
        Schema schema;
        try {
            schema = new Schema.Parser().parse(text);
        } catch (RuntimeException e) {
            throw new UnreadableKey("Key schema " + schemaId + " is not a readable Avro schema: " + e.getMessage(), e);
        }
        try {
            BinaryDecoder decoder =
                    DecoderFactory.get().binaryDecoder(body.array(), body.position(), body.remaining(), null);
            Object value = new GenericDatumReader<>(schema).read(null, decoder);
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
        } catch (IOException | RuntimeException e) {
            if (e instanceof UnreadableKey unreadable) {
                throw unreadable;
            }
            throw new UnreadableKey("Key with Avro schema " + schemaId + " cannot be decoded: " + e, e);
        }
    }

    private static String json(int schemaId, ByteBuffer body) {
        JsonNode value;
        try {
            value = JSON.readTree(body.array(), body.position(), body.remaining());
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
     * Confluent's Protobuf framing: after the header, the message indexes (a zigzag varint count, then that many
     * zigzag varints; a single 0 byte for the first message), then the message. The record_id is the string field
     * the schema names {@code record_id}.
     */
    private static String protobuf(int schemaId, String text, ByteBuffer body) {
        Matcher field = PROTO_FIELD.matcher(text);
        if (!field.find()) {
            throw new UnreadableKey(
                    "Key with Protobuf schema " + schemaId + " has no field 'string " + KEY_FIELD + " = N;'", null);
        }
        int number = Integer.parseInt(field.group(1));
        try {
            long count = zigzag(varint(body));
            for (long i = 0; i < count; i++) {
                varint(body);
            }
            while (body.hasRemaining()) {
                long tag = varint(body);
                int wireType = (int) (tag & 7);
                if (tag >>> 3 == number && wireType == 2) {
                    byte[] bytes = new byte[(int) varint(body)];
                    body.get(bytes);
                    return utf8(bytes);
                }
                switch (wireType) {
                    case 0 -> varint(body);
                    case 1 -> body.position(body.position() + 8);
                    case 2 -> body.position(body.position() + (int) varint(body));
                    case 5 -> body.position(body.position() + 4);
                    default -> throw new UnreadableKey(
                            "Key with Protobuf schema " + schemaId + " has wire type " + wireType, null);
                }
            }
        } catch (RuntimeException e) {
            if (e instanceof UnreadableKey unreadable) {
                throw unreadable;
            }
            throw new UnreadableKey("Key with Protobuf schema " + schemaId + " cannot be decoded: " + e, e);
        }
        return ""; // proto3 leaves an empty string out: the field is present and empty
    }

    private static long varint(ByteBuffer in) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = in.get();
            value |= (long) (b & 0x7f) << shift;
            if (b >= 0) {
                return value;
            }
        }
        throw new IllegalArgumentException("varint longer than 10 bytes");
    }

    private static long zigzag(long n) {
        return (n >>> 1) ^ -(n & 1);
    }

    private static String utf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new UnreadableKey(
                    "Key of " + bytes.length + " bytes is neither UTF-8 text nor Confluent wire format", e);
        }
    }
}
