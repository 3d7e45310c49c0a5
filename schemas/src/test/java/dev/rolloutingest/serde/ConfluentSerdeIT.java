package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.FreePorts;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.Decoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The serde against a real Confluent-compatible registry (Apicurio, child process). */
class ConfluentSerdeIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static ApicurioRegistry registry;
    private static HttpClient http;

    @BeforeAll
    static void startRegistry() {
        registry = ApicurioRegistry.start(Path.of("target", "it-registry"), Duration.ofSeconds(120));
        http = HttpClient.newHttpClient();
    }

    @AfterAll
    static void stopRegistry() {
        registry.close();
    }

    private static Map<String, Object> config(Object... extra) {
        var map = new HashMap<String, Object>(Map.of("schema.registry.url", registry.confluentUrl()));
        for (int i = 0; i < extra.length; i += 2) {
            map.put((String) extra[i], extra[i + 1]);
        }
        return map;
    }

    private static <T extends org.apache.avro.generic.IndexedRecord> ConfluentAvroSerializer<T> serializer(
            Object... extra) {
        ConfluentAvroSerializer<T> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(config(extra), false);
        return serializer;
    }

    private static ConfluentAvroDeserializer<Rollout> rolloutDeserializer() {
        ConfluentAvroDeserializer<Rollout> deserializer = new ConfluentAvroDeserializer<>(null, Rollout.class);
        deserializer.configure(config(), false);
        return deserializer;
    }

    /** Plays an independent client: raw REST calls, manual framing, plain Avro. */
    private static int registerRaw(String subject, String schemaJson) throws Exception {
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create(registry.confluentUrl() + "/subjects/" + subject + "/versions"))
                        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                        .POST(HttpRequest.BodyPublishers.ofString(JSON.createObjectNode()
                                .put("schema", schemaJson)
                                .toString()))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return JSON.readTree(response.body()).get("id").asInt();
    }

    private static byte[] avroBinary(Schema schema, GenericRecord record) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(schema).write(record, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    @Test
    void specificRolloutRoundTripsThroughTheRegistry() {
        Rollout rollout = new RolloutGenerator("exp-a", 64, 1).rollout(7, 0);
        byte[] bytes = serializer().serialize("roundtrip", rollout);
        assertThat(rolloutDeserializer().deserialize("roundtrip", bytes)).isEqualTo(rollout);
    }

    @Test
    void bytesMatchTheConfluentTestVector() throws Exception {
        Schema schema = new Schema.Parser()
                .parse(
                        "{\"type\":\"record\",\"name\":\"Vector\",\"fields\":[{\"name\":\"a\",\"type\":\"string\"},{\"name\":\"n\",\"type\":\"int\"}]}");
        GenericRecord record = new GenericData.Record(schema);
        record.put("a", "hi");
        record.put("n", 1);
        byte[] bytes = serializer().serialize("vector", record);
        int id = registerRaw("vector-value", schema.toString());
        // 0x00, 4-byte big-endian id, then Avro: zig-zag length 2 (0x04), 'h' 'i', zig-zag 1 (0x02).
        String expected = "00" + String.format("%08x", id) + "046869" + "02";
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo(expected);
    }

    @Test
    void anIndependentReaderDecodesOurBytes() throws Exception {
        Rollout rollout = new RolloutGenerator("exp-b", 16, 2).rollout(3, 1);
        byte[] bytes = serializer().serialize("independent-read", rollout);

        assertThat(bytes[0]).isEqualTo((byte) 0);
        int id = ByteBuffer.wrap(bytes, 1, 4).getInt();
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create(registry.confluentUrl() + "/schemas/ids/" + id))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        Schema writer = new Schema.Parser()
                .parse(JSON.readTree(response.body()).get("schema").asText());
        GenericRecord decoded = new GenericDatumReader<GenericRecord>(writer)
                .read(null, DecoderFactory.get().binaryDecoder(Arrays.copyOfRange(bytes, 5, bytes.length), null));
        assertThat(decoded.get("record_id").toString()).isEqualTo(rollout.getRecordId());
        assertThat(decoded.get("sequence_order")).isEqualTo(rollout.getSequenceOrder());
        assertThat(((ByteBuffer) decoded.get("binary_payload")).remaining()).isEqualTo(16);
    }

    @Test
    void anIndependentProducersBytesDecodeWithOurDeserializer() throws Exception {
        Rollout rollout = new RolloutGenerator("exp-c", 0, 3).rollout(11, 0);
        int id = registerRaw("independent-write-value", Rollout.getClassSchema().toString());
        GenericRecord generic = new GenericData.Record(Rollout.getClassSchema());
        // Plain Avro with no logical-type conversions: timestamps are written as raw micros.
        for (Schema.Field f : Rollout.getClassSchema().getFields()) {
            Object value = rollout.get(f.pos());
            if (value instanceof Instant instant) {
                value = instant.getEpochSecond() * 1_000_000L + instant.getNano() / 1_000;
            }
            generic.put(f.name(), value);
        }
        byte[] framed = WireFormat.frame(id, avroBinary(Rollout.getClassSchema(), generic));
        assertThat(rolloutDeserializer().deserialize("independent-write", framed))
                .isEqualTo(rollout);
    }

    @Test
    void anOldProducersRecordReadsWithTheNewSchema() throws Exception {
        // The first version of Rollout had no advantage, policy_version or binary_payload.
        Schema old = new Schema.Parser()
                .parse(
                        """
                {"type":"record","name":"Rollout","namespace":"dev.rolloutingest.schemas","fields":[
                 {"name":"record_id","type":"string"},{"name":"experiment","type":"string"},
                 {"name":"rollout_id","type":"string"},{"name":"sequence_order","type":"int"},
                 {"name":"role","type":"string"},
                 {"name":"created_at","type":{"type":"long","logicalType":"timestamp-micros"}},
                 {"name":"reward","type":["null","float"],"default":null}]}""");
        GenericRecord record = new GenericData.Record(old);
        record.put("record_id", "old-1");
        record.put("experiment", "exp-old");
        record.put("rollout_id", "r-1");
        record.put("sequence_order", 2);
        record.put("role", "assistant");
        record.put("created_at", 1_700_000_000_000_000L);
        record.put("reward", 0.5f);
        byte[] bytes = serializer().serialize("evolving", record);

        Rollout read = rolloutDeserializer().deserialize("evolving", bytes);
        assertThat(read.getRecordId()).isEqualTo("old-1");
        assertThat(read.getReward()).isEqualTo(0.5f);
        assertThat(read.getIncludeInTraining()).isTrue();
        assertThat(read.getBinaryPayload()).isNull();
        assertThat(read.getInputTokens()).isEmpty();
    }

    @Test
    void anIncompatibleSchemaIsRejectedWith409() {
        SchemaRegistryClient client = new SchemaRegistryClient(SerdeConfig.from(config()));
        client.register("strict-value", Rollout.getClassSchema());
        client.setCompatibility("strict-value", "BACKWARD");
        Schema breaking = new Schema.Parser()
                .parse(
                        """
                {"type":"record","name":"Rollout","namespace":"dev.rolloutingest.schemas","fields":[
                 {"name":"record_id","type":"int"},{"name":"must_have","type":"string"}]}""");
        GenericRecord record = new GenericData.Record(breaking);
        record.put("record_id", 1);
        record.put("must_have", "x");
        assertThatThrownBy(() -> serializer().serialize("strict", record))
                .isInstanceOf(SerdeException.IncompatibleSchema.class)
                .hasMessageContaining("strict-value")
                .hasMessageContaining("409");
    }

    @Test
    void anUnknownSchemaIdIsATypedError() {
        byte[] bytes = WireFormat.frame(987_654, new byte[] {2});
        assertThatThrownBy(() -> rolloutDeserializer().deserialize("rollouts", bytes))
                .isInstanceOf(SerdeException.UnknownSchemaId.class)
                .hasMessageContaining("987654");
    }

    @Test
    void aTruncatedBodyIsATypedErrorNamingTheTopic() {
        byte[] bytes = serializer().serialize("truncated", new RolloutGenerator("exp-d", 32, 4).rollout(1, 0));
        byte[] cut = Arrays.copyOf(bytes, bytes.length - 10);
        assertThatThrownBy(() -> rolloutDeserializer().deserialize("truncated", cut))
                .isInstanceOf(SerdeException.InvalidWireFormat.class)
                .hasMessageContaining("truncated")
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("not-avro");
    }

    @Test
    void withoutAutoRegisterAnUnregisteredSchemaFailsAndARegisteredOneIsFound() {
        Rollout rollout = new RolloutGenerator("exp-e", 0, 5).rollout(1, 0);
        assertThatThrownBy(() -> serializer("auto.register.schemas", false).serialize("lookup-only", rollout))
                .isInstanceOf(SerdeException.RegistryError.class)
                .hasMessageContaining("lookup-only-value");
        byte[] registered = serializer().serialize("lookup-only", rollout);
        byte[] looked = serializer("auto.register.schemas", false).serialize("lookup-only", rollout);
        assertThat(looked).isEqualTo(registered);
    }

    @Test
    void useLatestVersionWritesWithTheSubjectsLatestSchema() throws Exception {
        int latestId = registerRaw("latest-value", Rollout.getClassSchema().toString());
        Schema narrower = new Schema.Parser()
                .parse(
                        """
                {"type":"record","name":"Rollout","namespace":"dev.rolloutingest.schemas","fields":[
                 {"name":"record_id","type":"string"},{"name":"experiment","type":"string"},
                 {"name":"rollout_id","type":"string"},{"name":"sequence_order","type":"int"},
                 {"name":"role","type":"string"},
                 {"name":"created_at","type":{"type":"long","logicalType":"timestamp-micros"}}]}""");
        GenericRecord record = new GenericData.Record(narrower);
        record.put("record_id", "l-1");
        record.put("experiment", "e");
        record.put("rollout_id", "r");
        record.put("sequence_order", 0);
        record.put("role", "user");
        record.put("created_at", 5L);
        byte[] bytes = serializer("use.latest.version", true, "auto.register.schemas", false)
                .serialize("latest", record);
        assertThat(ByteBuffer.wrap(bytes, 1, 4).getInt()).isEqualTo(latestId);
        assertThat(rolloutDeserializer().deserialize("latest", bytes).getRecordId())
                .isEqualTo("l-1");
    }

    @Test
    void anUnreachableRegistryFailsAfterBoundedRetries() {
        String deadUrl = "http://127.0.0.1:" + FreePorts.next();
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(
                Map.of(
                        "schema.registry.url",
                        deadUrl,
                        "schema.registry.max.retries",
                        2,
                        "schema.registry.retry.backoff.ms",
                        10),
                false);
        long started = System.nanoTime();
        assertThatThrownBy(() -> serializer.serialize("rollouts", new RolloutGenerator("x", 0, 1).rollout(0, 0)))
                .isInstanceOf(SerdeException.RegistryUnavailable.class)
                .hasMessageContaining("3 attempts")
                .hasMessageContaining(deadUrl);
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        assertThat(took)
                .as("bounded, not endless, retries (a hang guard, not a target): measured %d ms", took.toMillis())
                .isLessThan(Duration.ofSeconds(30));
    }

    @Test
    void aRecordWhoseSchemaCannotResolveToRolloutIsATypedIncompatibleError() throws Exception {
        // Registered under another subject, so no compatibility check stopped it: record_id is an int here.
        Schema alien = new Schema.Parser()
                .parse(
                        """
                {"type":"record","name":"Rollout","namespace":"dev.rolloutingest.schemas","fields":[
                 {"name":"record_id","type":"int"}]}""");
        int id = registerRaw("alien-value", alien.toString());
        GenericRecord record = new GenericData.Record(alien);
        record.put("record_id", 7);
        byte[] bytes = WireFormat.frame(id, avroBinary(alien, record));
        assertThatThrownBy(() -> rolloutDeserializer().deserialize("rollouts", bytes))
                .isInstanceOf(SerdeException.IncompatibleSchema.class)
                .hasMessageContaining("rollouts")
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("schema-incompatible");
    }

    /** Reads every field the way a column writer would, into a map by field name, for comparison. */
    private static final FieldReader<Map<String, Object>> BY_FIELD = (in, order) -> {
        Map<String, Object> values = new HashMap<>();
        for (Schema.Field field : order) {
            values.put(field.name(), readValue(in, field.schema()));
        }
        return values;
    };

    private static Object readValue(Decoder in, Schema schema) throws IOException {
        switch (schema.getType()) {
            case NULL -> {
                in.readNull();
                return null;
            }
            case STRING -> {
                return in.readString();
            }
            case INT -> {
                return in.readInt();
            }
            case LONG -> {
                long value = in.readLong();
                return "timestamp-micros".equals(schema.getProp("logicalType"))
                        ? Instant.EPOCH.plus(value, ChronoUnit.MICROS)
                        : value;
            }
            case FLOAT -> {
                return in.readFloat();
            }
            case BOOLEAN -> {
                return in.readBoolean();
            }
            case BYTES -> {
                return in.readBytes(null);
            }
            case UNION -> {
                return readValue(in, schema.getTypes().get(in.readIndex()));
            }
            case ARRAY -> {
                List<Object> items = new ArrayList<>();
                for (long n = in.readArrayStart(); n != 0; n = in.arrayNext()) {
                    for (long i = 0; i < n; i++) {
                        items.add(readValue(in, schema.getElementType()));
                    }
                }
                return items;
            }
            case MAP -> {
                Map<String, Object> entries = new HashMap<>();
                for (long n = in.readMapStart(); n != 0; n = in.mapNext()) {
                    for (long i = 0; i < n; i++) {
                        entries.put(in.readString(), readValue(in, schema.getValueType()));
                    }
                }
                return entries;
            }
            default -> throw new IllegalArgumentException(schema.toString());
        }
    }

    private static Map<String, Object> byField(Rollout rollout) {
        Map<String, Object> values = new HashMap<>();
        for (Schema.Field field : Rollout.getClassSchema().getFields()) {
            values.put(field.name(), rollout.get(field.pos()));
        }
        return values;
    }

    @Test
    void fieldByFieldReadsWhatTheObjectReaderReadsForTheSameAndForAnOlderSchema() throws Exception {
        ConfluentAvroDeserializer<Rollout> deserializer = rolloutDeserializer();
        Rollout rollout = new RolloutGenerator("exp-f", 48, 9).rollout(5, 2);
        byte[] current = serializer().serialize("fields-current", rollout);
        assertThat(deserializer.deserializeFields("fields-current", current, BY_FIELD))
                .isEqualTo(byField(rollout));

        Schema old = new Schema.Parser()
                .parse(
                        """
                {"type":"record","name":"Rollout","namespace":"dev.rolloutingest.schemas","fields":[
                 {"name":"experiment","type":"string"},{"name":"record_id","type":"string"},
                 {"name":"rollout_id","type":"string"},{"name":"sequence_order","type":"int"},
                 {"name":"role","type":"string"},
                 {"name":"created_at","type":{"type":"long","logicalType":"timestamp-micros"}},
                 {"name":"reward","type":["null","float"],"default":null},
                 {"name":"gone_later","type":"string","default":""}]}""");
        GenericRecord record = new GenericData.Record(old);
        record.put("experiment", "exp-old");
        record.put("record_id", "old-2");
        record.put("rollout_id", "r-2");
        record.put("sequence_order", 3);
        record.put("role", "user");
        record.put("created_at", 1_700_000_000_000_001L);
        record.put("reward", 0.75f);
        record.put("gone_later", "dropped by resolution");
        byte[] older = serializer().serialize("fields-old", record);
        Map<String, Object> read = deserializer.deserializeFields("fields-old", older, BY_FIELD);
        assertThat(read).isEqualTo(byField(deserializer.deserialize("fields-old", older)));
        assertThat(read).containsEntry("record_id", "old-2").containsEntry("include_in_training", true);
    }

    @Test
    void fieldByFieldFailsWithTheObjectReadersTypedErrors() throws Exception {
        ConfluentAvroDeserializer<Rollout> deserializer = rolloutDeserializer();
        byte[] bytes = serializer().serialize("fields-bad", new RolloutGenerator("exp-g", 32, 4).rollout(1, 0));
        byte[] cut = Arrays.copyOf(bytes, bytes.length - 10);
        assertThatThrownBy(() -> deserializer.deserializeFields("fields-bad", cut, BY_FIELD))
                .isInstanceOf(SerdeException.InvalidWireFormat.class)
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("not-avro");
        byte[] longer = Arrays.copyOf(bytes, bytes.length + 3);
        assertThatThrownBy(() -> deserializer.deserializeFields("fields-bad", longer, BY_FIELD))
                .isInstanceOf(SerdeException.InvalidWireFormat.class)
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("trailing-bytes");
        Schema alien = new Schema.Parser()
                .parse(
                        """
                {"type":"record","name":"Rollout","namespace":"dev.rolloutingest.schemas","fields":[
                 {"name":"record_id","type":"int"}]}""");
        int id = registerRaw("fields-alien-value", alien.toString());
        GenericRecord record = new GenericData.Record(alien);
        record.put("record_id", 7);
        byte[] alienBytes = WireFormat.frame(id, avroBinary(alien, record));
        assertThatThrownBy(() -> deserializer.deserializeFields("rollouts", alienBytes, BY_FIELD))
                .isInstanceOf(SerdeException.class)
                .extracting(e -> ((SerdeException) e).reason())
                .isEqualTo("schema-incompatible");
    }
}
