package dev.rolloutingest.serde.fuzz;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.RecordKeys;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.StubRegistry;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.serde.values.ValueDeserializer;
import dev.rolloutingest.serde.values.ValueFormat;
import dev.rolloutingest.serde.values.ValueFormats;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.avro.Schema;
import org.apache.avro.io.Decoder;
import org.apache.avro.util.Utf8;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every decoder and schema parser of a record's bytes, fuzzed: Avro, plain JSON, JSON Schema and Protobuf values,
 * keys, and the schemas a registry answers (Avro, JSON Schema, {@code .proto} text, base64 descriptors). Each input
 * must finish within {@link Fuzzer#HANG} and throw nothing but a record's {@code SerdeException}, the type whose reason
 * the dead-letter topic carries. A fixed seed, and a budget of inputs and seconds per target, keep the run
 * reproducible and under a minute; docs/reliability.md lists what a run covered.
 */
class DecoderFuzzTest {
    /** The build's seed; -Dfuzz.seed and -Dfuzz.scale (budgets times it) explore further by hand. */
    private static final long SEED = Long.getLong("fuzz.seed", 0x5EED_2026_1205L);

    private static final int SCALE = Integer.getInteger("fuzz.scale", 1);
    // at most 5 x 5 s + 4 x 6 s: under a minute however slow the machine; on an idle one about half of it
    private static final Fuzzer.Budget AVRO_VALUES = budget(20_000, 5);
    private static final Fuzzer.Budget KEYS = budget(20_000, 5);
    private static final Fuzzer.Budget PROTOBUF_VALUES = budget(10_000, 5);
    private static final Fuzzer.Budget JSON_VALUES = budget(8_000, 5);
    private static final Fuzzer.Budget SCHEMAS = budget(1_500, 6);

    private static Fuzzer.Budget budget(int inputs, int seconds) {
        return new Fuzzer.Budget(inputs * SCALE, Duration.ofSeconds((long) seconds * SCALE));
    }

    // the registry's schema ids the corpus's frames name
    private static final int AVRO = 1;
    private static final int AVRO_ADDED = 2;
    private static final int PROTO = 3;
    private static final int PROTO_RICH = 4;
    private static final int PROTO_GROUPS = 5;
    private static final int PROTO_RICH_BASE64 = 6;
    private static final int JSON_SCHEMA = 7;
    private static final int JSON_SCHEMA_ADDED = 8;

    /** Protobuf tags (groups, a nested length), message indexes, a huge varint, Avro's negative block count. */
    private static final List<String> BINARY_TOKENS = List.of(
            "00",
            "0202",
            "0b",
            "0c",
            "0a00",
            "1203616263",
            "a301",
            "a401",
            "08ffffffff0f",
            "01",
            "03",
            "07",
            "c328",
            "4204",
            "fa01",
            "0400");

    private static final List<String> JSON_TOKENS = List.of(
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "null",
            "true",
            "1e999",
            "-0",
            "NaN",
            "\"\\ud800\"",
            "\"record_id\"",
            "\"created_at\"",
            "\"metadata\"",
            "\"input_tokens\"",
            "\"binary_payload\"",
            "{\"a\":{}}",
            "[[[[[[[[",
            "9223372036854775808",
            "\"type\"",
            "\"record\"",
            "\"fields\"",
            "\"properties\"",
            "\"$ref\"",
            "\"items\"",
            "\"name\"",
            "\"array\"",
            "\"object\"",
            "\"string\"",
            "\"oneOf\"",
            "\"logicalType\"");
    private static final List<String> PROTO_TOKENS = List.of(
            "{",
            "}",
            "[",
            "]",
            ";",
            "=",
            "<",
            ">",
            ",",
            "\"",
            "'",
            "message",
            "enum",
            "oneof",
            "group",
            "map",
            "repeated",
            "optional",
            "required",
            "option",
            "reserved",
            "extensions",
            "extend",
            "service",
            "syntax",
            "package",
            "import",
            "/*",
            "//",
            "\n",
            "1",
            "-1",
            "0x7fffffff",
            "536870912",
            "google.protobuf.Timestamp",
            "string",
            "int32",
            "bytes",
            ".fuzz.v1.Step",
            "max",
            "to");

    private static StubRegistry registry;
    private static ValueDeserializer auto;
    private static ValueDeserializer plainJson;
    private static RecordKeys keys;
    private static final AtomicInteger nextSchemaId = new AtomicInteger(1_000);

    @BeforeAll
    static void registry() throws IOException {
        registry = new StubRegistry()
                .schema(AVRO, null, text("avro-schema", "rollout.avsc"))
                .schema(AVRO_ADDED, null, text("avro-schema", "rollout-added.avsc"))
                .schema(PROTO, "PROTOBUF", text("proto-schema", "rollout.proto"))
                .schema(PROTO_RICH, "PROTOBUF", text("proto-schema", "rich.proto"))
                .schema(PROTO_GROUPS, "PROTOBUF", text("proto-schema", "groups.proto"))
                .schema(PROTO_RICH_BASE64, "PROTOBUF", base64("proto-descriptor", "rich.bin"))
                .schema(JSON_SCHEMA, "JSON", text("json-schema", "rollout.json"))
                .schema(JSON_SCHEMA_ADDED, "JSON", text("json-schema", "added.json"))
                .schema(10, null, text("avro-schema", "string.avsc"))
                .schema(11, null, text("avro-schema", "key-record.avsc"))
                .schema(12, "JSON", text("json-schema", "string.json"))
                .schema(13, "JSON", text("json-schema", "key-object.json"))
                .schema(14, "PROTOBUF", text("proto-schema", "keys.proto"))
                .schema(15, "PROTOBUF", base64("proto-descriptor", "keys.bin"));
        ConfluentAvroDeserializer<Rollout> avro =
                new ConfluentAvroDeserializer<>(null, Rollout.class).keepingAddedFields(true);
        avro.configure(Map.of("schema.registry.url", registry.url()), false);
        auto = values(ValueFormats.all(ValueFormat.AUTO), avro);
        plainJson = values(ValueFormats.all(ValueFormat.JSON), avro);
        keys = new RecordKeys(registry.client(1_000), 1_000);
    }

    private static ValueDeserializer values(ValueFormats formats, ConfluentAvroDeserializer<Rollout> avro) {
        return new ValueDeserializer(
                formats, avro, registry.client(1_000), true, (id, f) -> {}, (id, f) -> {}, (id, f) -> {}, 1_000);
    }

    @AfterAll
    static void stop() {
        registry.close();
    }

    private static String text(String target, String file) throws IOException {
        return Files.readString(resource(target, file));
    }

    private static String base64(String target, String file) throws IOException {
        return Base64.getEncoder().encodeToString(Files.readAllBytes(resource(target, file)));
    }

    private static Path resource(String target, String file) {
        try {
            return Path.of(DecoderFuzzTest.class
                    .getClassLoader()
                    .getResource("fuzz/" + target + "/" + file)
                    .toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Reads a row as the batch's reader does: every value through the decoder by its field's schema, arrays and maps
     * item by item (nothing sized by a count the bytes claim), strings and bytes into reused buffers.
     */
    private static final FieldReader<Integer> ROWS = new FieldReader<>() {
        private final Utf8 text = new Utf8();
        private ByteBuffer bytes;

        @Override
        public Integer read(Decoder in, Schema.Field[] order) throws IOException {
            for (Schema.Field field : order) {
                value(field.schema(), in);
            }
            return order.length;
        }

        private void value(Schema schema, Decoder in) throws IOException {
            switch (schema.getType()) {
                case NULL -> in.readNull();
                case BOOLEAN -> in.readBoolean();
                case INT -> in.readInt();
                case LONG -> in.readLong();
                case FLOAT -> in.readFloat();
                case DOUBLE -> in.readDouble();
                case STRING -> in.readString(text);
                case BYTES -> bytes = in.readBytes(bytes);
                case ENUM -> in.readEnum();
                case FIXED -> in.skipFixed(schema.getFixedSize());
                case UNION -> value(schema.getTypes().get(in.readIndex()), in);
                case ARRAY -> {
                    for (long n = in.readArrayStart(); n != 0; n = in.arrayNext()) {
                        for (long i = 0; i < n; i++) {
                            value(schema.getElementType(), in);
                        }
                    }
                }
                case MAP -> {
                    for (long n = in.readMapStart(); n != 0; n = in.mapNext()) {
                        for (long i = 0; i < n; i++) {
                            in.readString(text);
                            value(schema.getValueType(), in);
                        }
                    }
                }
                case RECORD -> {
                    for (Schema.Field field : schema.getFields()) {
                        value(field.schema(), in);
                    }
                }
            }
        }
    };

    private static void check(Fuzzer.Outcome outcome) {
        System.out.println(outcome + (valueOutcomes.isEmpty() ? "" : "; values framed with them: " + valueOutcomes));
        valueOutcomes.clear();
        assertThat(outcome.failures()).as(outcome.toString()).isEmpty();
    }

    private static Mutator binary() {
        return Mutator.hex(BINARY_TOKENS, WireFormat.HEADER_LENGTH);
    }

    @Test
    void avroValues() {
        check(Fuzzer.run("avro-value", SEED, AVRO_VALUES, binary(), input -> auto.deserializeFields("t", input, ROWS)));
    }

    @Test
    void plainJsonValues() {
        check(Fuzzer.run(
                "json-value",
                SEED,
                JSON_VALUES,
                Mutator.text(JSON_TOKENS, 0),
                input -> plainJson.deserializeFields("t", input, ROWS)));
    }

    @Test
    void jsonSchemaValues() {
        check(Fuzzer.run(
                "json-schema-value",
                SEED,
                JSON_VALUES,
                Mutator.text(JSON_TOKENS, WireFormat.HEADER_LENGTH),
                input -> auto.deserializeFields("t", input, ROWS)));
    }

    @Test
    void protobufValues() {
        check(Fuzzer.run(
                "protobuf-value", SEED, PROTOBUF_VALUES, binary(), input -> auto.deserializeFields("t", input, ROWS)));
    }

    @Test
    void keys() {
        check(Fuzzer.run("keys", SEED, KEYS, binary(), input -> keys.recordId("t", input)));
    }

    // ---- schemas: each input registered under an id of its own, then a value and a key of it read ----

    private static final byte[] AVRO_BODY = body("avro-value", "rollout-0.bin");
    private static final byte[] JSON_BODY = body("json-schema-value", "rollout-0.bin");
    private static final byte[] PROTO_BODY = body("protobuf-value", "rollout-0.bin");
    private static final byte[] PROTO_RICH_BODY = body("protobuf-value", "rich.bin");

    private static byte[] body(String target, String file) {
        try {
            byte[] framed = Files.readAllBytes(resource(target, file));
            return Arrays.copyOfRange(framed, WireFormat.HEADER_LENGTH, framed.length);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** How the values framed with a schema target's inputs' ids fared (the run counts the keys). */
    private static final Map<String, Integer> valueOutcomes = new TreeMap<>();

    /**
     * Registers a schema text under an id of its own, reads a value framed with it for each of {@code bodies}, then
     * the last body as a key.
     */
    private static void readWith(String type, String text, byte[]... bodies) {
        int id = nextSchemaId.incrementAndGet();
        registry.schema(id, type, text);
        for (byte[] body : bodies) {
            String outcome = "decoded";
            try {
                auto.deserializeFields("t", WireFormat.frame(id, body), ROWS);
            } catch (SerdeException e) {
                if (!e.recordsFault()) {
                    throw e;
                }
                outcome = e.reason();
            }
            valueOutcomes.merge(outcome, 1, Integer::sum);
        }
        keys.recordId("t", WireFormat.frame(id, bodies[bodies.length - 1]));
    }

    private static String utf8(byte[] input) {
        return new String(input, StandardCharsets.UTF_8);
    }

    @Test
    void avroSchemas() {
        check(Fuzzer.run(
                "avro-schema",
                SEED,
                SCHEMAS,
                Mutator.text(JSON_TOKENS, 0),
                // no schemaType, as Apicurio answers: the text's type is told from it too
                input -> readWith(null, utf8(input), AVRO_BODY, new byte[] {6, 'k', '-', '1'})));
    }

    @Test
    void jsonSchemas() {
        check(Fuzzer.run(
                "json-schema",
                SEED,
                SCHEMAS,
                Mutator.text(JSON_TOKENS, 0),
                input -> readWith("JSON", utf8(input), JSON_BODY, "\"k-1\"".getBytes(StandardCharsets.UTF_8))));
    }

    @Test
    void protoTexts() {
        AtomicInteger typed = new AtomicInteger();
        check(Fuzzer.run(
                "proto-schema",
                SEED,
                SCHEMAS,
                Mutator.text(PROTO_TOKENS, 0),
                input -> readWith(
                        typed.getAndIncrement() % 2 == 0 ? "PROTOBUF" : null,
                        utf8(input),
                        PROTO_BODY,
                        PROTO_RICH_BODY,
                        new byte[] {0, 0x0a, 1, 'k'})));
    }

    @Test
    void protoDescriptors() {
        check(Fuzzer.run(
                "proto-descriptor",
                SEED,
                SCHEMAS,
                binaryDescriptors(),
                input -> readWith(
                        "PROTOBUF", Base64.getEncoder().encodeToString(input), PROTO_BODY, PROTO_RICH_BODY, new byte[] {
                            0, 0x0a, 1, 'k'
                        })));
    }

    private static Mutator binaryDescriptors() {
        // FileDescriptorProto's fields: name, package, a message, an enum, a field's number, label, type, type name
        return Mutator.hex(
                List.of(
                        "120141",
                        "2200",
                        "1a00",
                        "4200",
                        "3a00",
                        "0801",
                        "180a",
                        "2803",
                        "320141",
                        "520142",
                        "6206" + "70726f746f33"),
                0);
    }
}
