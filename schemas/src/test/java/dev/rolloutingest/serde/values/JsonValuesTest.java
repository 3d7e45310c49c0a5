package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.WireFormat;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.junit.jupiter.api.Test;

/** Plain JSON values: the mapping to the contract, each conversion, each bad input and the added fields. */
class JsonValuesTest {
    private final List<List<String>> dropped = new ArrayList<>();
    private final List<List<String>> added = new ArrayList<>();

    private ValueDeserializer json(boolean keepAdded) {
        return new ValueDeserializer(
                ValueFormats.all(ValueFormat.JSON),
                null,
                null,
                keepAdded,
                (id, fields) -> added.add(fields),
                (id, fields) -> dropped.add(fields),
                (id, numbers) -> {},
                100);
    }

    private Map<String, Object> read(String json) {
        return json(true).deserializeFields("t", json.getBytes(StandardCharsets.UTF_8), Rows.READER);
    }

    private static final String REQUIRED = "\"record_id\":\"r1\",\"experiment\":\"e\",\"rollout_id\":\"ro\","
            + "\"sequence_order\":2,\"role\":\"user\",\"created_at\":1700000000123";

    @Test
    void aRolloutReadsAsItsAvroEncodingDoes() throws Exception {
        RolloutGenerator generator = new RolloutGenerator("json", 48, 3);
        for (int i = 0; i < 20; i++) {
            Rollout rollout = generator.rollout(i, i % 3);
            Map<String, Object> row = json(true).deserializeFields("t", RolloutValues.json(rollout), Rows.READER);
            assertThat(row).isEqualTo(Rows.avro(rollout));
        }
    }

    @Test
    void aReaderWithColumnsGetsTheScannedRowStraightAndTheParsersRowOnlyForValuesTheScanGivesUp() {
        RolloutGenerator generator = new RolloutGenerator("json", 48, 3);
        byte[] producers = RolloutValues.json(generator.rollout(1, 1));
        byte[] added = ("{" + REQUIRED + ",\"score\":1}").getBytes(StandardCharsets.UTF_8);
        AvroTape parsed = new AvroTape();
        new JsonValues(new AddedFields(true, (id, f) -> {}, (id, f) -> {}, 100))
                .readByParser(producers, 0, producers.length, Map.of(), AddedFields.NO_SCHEMA_ID, parsed);
        AvroTape columns = new AvroTape();
        FieldReader<String> reader = new FieldReader<>() {
            @Override
            public String read(org.apache.avro.io.Decoder in, Schema.Field[] order) throws java.io.IOException {
                Rows.READER.read(in, order);
                return "through the encoding";
            }

            @Override
            public Columns<String> columns() {
                columns.reset();
                return new TapeColumns(columns);
            }
        };
        assertThat(json(true).deserializeFields("t", producers, reader)).isEqualTo("straight into the columns");
        assertThat(columns.written()).isEqualTo(parsed.written());
        assertThat(json(true).deserializeFields("t", added, reader)).isEqualTo("through the encoding");
    }

    /** Columns that are a tape, to compare with the parser's. */
    private static final class TapeColumns implements FieldReader.Columns<String> {
        private final AvroTape tape;

        TapeColumns(AvroTape tape) {
            this.tape = tape;
        }

        @Override
        public String finish() {
            return "straight into the columns";
        }

        @Override
        public void string(int field, byte[] utf8, int offset, int length) {
            tape.string(field, utf8, offset, length);
        }

        @Override
        public void nullValue(int field) {
            tape.nullValue(field);
        }

        @Override
        public void intValue(int field, int value) {
            tape.intValue(field, value);
        }

        @Override
        public void longValue(int field, long value) {
            tape.longValue(field, value);
        }

        @Override
        public void floatValue(int field, float value) {
            tape.floatValue(field, value);
        }

        @Override
        public void booleanValue(int field, boolean value) {
            tape.booleanValue(field, value);
        }

        @Override
        public void ints(int field, int[] items, int count) {
            tape.ints(field, items, count);
        }

        @Override
        public void floats(int field, float[] items, int count) {
            tape.floats(field, items, count);
        }

        @Override
        public void bytes(int field, byte[] bytes, int offset, int length) {
            tape.bytes(field, bytes, offset, length);
        }

        @Override
        public void mapStart(int field, int entries) {
            tape.mapStart(field, entries);
        }

        @Override
        public void mapKey(byte[] utf8, int offset, int length) {
            tape.mapKey(utf8, offset, length);
        }

        @Override
        public void mapValue(byte[] utf8, int offset, int length) {
            tape.mapValue(utf8, offset, length);
        }

        @Override
        public void mapEnd() {
            tape.mapEnd();
        }
    }

    @Test
    void absentAndNullOptionalFieldsTakeTheContractsDefaults() {
        Map<String, Object> row = read("{" + REQUIRED + ",\"content\":null,\"include_in_training\":null}");
        assertThat(row)
                .containsEntry("problem_id", null)
                .containsEntry("content", null)
                .containsEntry("input_tokens", List.of())
                .containsEntry("output_logprobs", List.of())
                .containsEntry("reward", null)
                .containsEntry("policy_version", null)
                .containsEntry("include_in_training", true)
                .containsEntry("metadata", Map.of())
                .containsEntry("binary_payload", null)
                .containsEntry("sequence_order", 2)
                .containsEntry("created_at", 1700000000123000L);
    }

    @Test
    void typesConvertWhereNothingIsLost() {
        Map<String, Object> row = read("{\"record_id\":\"r1\",\"experiment\":\"e\",\"rollout_id\":\"ro\","
                + "\"sequence_order\":3.0,\"role\":\"user\",\"created_at\":1700000000123.456,"
                + "\"reward\":1,\"advantage\":-Infinity,\"policy_version\":7.0,\"output_logprobs\":[NaN,-0.5,2],"
                + "\"metadata\":{\"temperature\":0.7,\"greedy\":false,\"name\":\"x\"},"
                + "\"binary_payload\":\"AAEC/w\"}");
        assertThat(row)
                .containsEntry("sequence_order", 3)
                .containsEntry("created_at", 1700000000123456L)
                .containsEntry("reward", 1.0f)
                .containsEntry("advantage", Float.NEGATIVE_INFINITY)
                .containsEntry("policy_version", 7L)
                .containsEntry("output_logprobs", List.of(Float.NaN, -0.5f, 2.0f))
                .containsEntry("metadata", Map.of("temperature", "0.7", "greedy", "false", "name", "x"))
                .containsEntry("binary_payload", "000102ff");
        assertThat(read("{" + REQUIRED.replace("1700000000123", "\"2025-01-02T03:04:05.123456+01:00\"")
                        + ",\"binary_payload\":[0,1,2,255]}"))
                .containsEntry("created_at", 1735783445123456L)
                .containsEntry("binary_payload", "000102ff");
        assertThat(read("{" + REQUIRED.replace("1700000000123", "\"2025-01-02T02:04:05.123456\"") + "}"))
                .as("no offset: UTC")
                .containsEntry("created_at", 1735783445123456L);
        assertThat(read("{" + REQUIRED.replace("1700000000123", "\"2025-01-02T02:04:05.123456Z\"") + "}"))
                .containsEntry("created_at", 1735783445123456L);
    }

    @Test
    void aRequiredFieldAbsentOrNullIsMissing() {
        for (String field : List.of("record_id", "experiment", "rollout_id", "sequence_order", "role", "created_at")) {
            String without = "{" + REQUIRED.replaceAll("\"" + field + "\":[^,]*,?", "") + "}";
            assertFails(without.replace(",}", "}"), "missing-field", field);
            assertFails(
                    "{" + REQUIRED.replaceAll("\"" + field + "\":[^,]*", "\"" + field + "\":null") + "}",
                    "missing-field",
                    field);
        }
    }

    @Test
    void wrongTypesNameTheField() {
        assertFails(
                "{" + REQUIRED.replace("\"sequence_order\":2", "\"sequence_order\":\"2\"") + "}",
                "wrong-type",
                "sequence_order");
        assertFails(
                "{" + REQUIRED.replace("\"sequence_order\":2", "\"sequence_order\":2.5") + "}",
                "wrong-type",
                "sequence_order");
        assertFails(
                "{" + REQUIRED.replace("\"sequence_order\":2", "\"sequence_order\":4294967296") + "}",
                "wrong-type",
                "sequence_order");
        assertFails(
                "{" + REQUIRED.replace("\"record_id\":\"r1\"", "\"record_id\":17") + "}", "wrong-type", "record_id");
        assertFails("{" + REQUIRED.replace("1700000000123", "\"yesterday\"") + "}", "wrong-type", "created_at");
        assertFails("{" + REQUIRED.replace("1700000000123", "true") + "}", "wrong-type", "created_at");
        assertFails("{" + REQUIRED + ",\"input_tokens\":[1,\"2\"]}", "wrong-type", "input_tokens");
        assertFails("{" + REQUIRED + ",\"input_tokens\":5}", "wrong-type", "input_tokens");
        assertFails("{" + REQUIRED + ",\"reward\":\"high\"}", "wrong-type", "reward");
        assertFails("{" + REQUIRED + ",\"include_in_training\":1}", "wrong-type", "include_in_training");
        assertFails("{" + REQUIRED + ",\"metadata\":{\"a\":{\"b\":1}}}", "wrong-type", "metadata.a");
        assertFails("{" + REQUIRED + ",\"metadata\":[]}", "wrong-type", "metadata");
        assertFails("{" + REQUIRED + ",\"binary_payload\":\"not base64!\"}", "wrong-type", "binary_payload");
        assertFails("{" + REQUIRED + ",\"binary_payload\":[1,256]}", "wrong-type", "binary_payload");
        assertFails("{" + REQUIRED + ",\"role\":\"a\",\"role\":\"b\"}", "duplicate-field", "role");
    }

    @Test
    void whatIsNotAJsonObjectIsNotJson() {
        assertFails("{" + REQUIRED, "not-json", "");
        assertFails("{" + REQUIRED + "} {}", "not-json", "more after");
        assertFails("[1,2]", "not-json", "not an object");
        assertFails("just text", "not-json", "");
        assertFails("", "not-json", "");
        assertFails("{" + REQUIRED + ",\"policy_version\":" + "9".repeat(5000) + "}", "not-json", "");
        assertFails("{" + REQUIRED + ",\"deep\":" + "[".repeat(3000) + "]".repeat(3000) + "}", "not-json", "");
        byte[] framed = WireFormat.frame(4, ("{" + REQUIRED + "}").getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> json(true).deserializeFields("t", framed, Rows.READER))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("wrong-format"))
                .hasMessageContaining("expected json, got the Confluent wire format (schema id 4)");
    }

    @Test
    void addedFieldsBecomeColumnsTypedByTheirValues() {
        Map<String, Object> row = read("{" + REQUIRED + ",\"steps\":12,\"score\":0.5,\"tags\":[\"a\",\"b\"],"
                + "\"env\":{\"seed\":3,\"name\":\"maze\"},\"gone\":null,\"none\":[]}");
        assertThat(row)
                .containsEntry("steps", 12L)
                .containsEntry("score", 0.5)
                .containsEntry("tags", List.of("a", "b"))
                .containsEntry("env", Map.of("name", "maze", "seed", 3L))
                .doesNotContainKeys("gone", "none");
        List<Schema.Field> first = List.copyOf(Rows.lastAdded);
        assertThat(first).extracting(Schema.Field::name).containsExactly("steps", "score", "tags", "env");
        assertThat(first).allSatisfy(f -> assertThat(f.pos()).isGreaterThanOrEqualTo(ContractField.ALL.length));
        ValueDeserializer same = json(true);
        same.deserializeFields("t", ("{" + REQUIRED + ",\"steps\":1}").getBytes(StandardCharsets.UTF_8), Rows.READER);
        Schema.Field steps = Rows.lastAdded.get(0);
        same.deserializeFields("t", ("{" + REQUIRED + ",\"steps\":2}").getBytes(StandardCharsets.UTF_8), Rows.READER);
        assertThat(Rows.lastAdded.get(0))
                .as("the same field object: the batch finds its column once")
                .isSameAs(steps);
        assertFails("{" + REQUIRED + ",\"mixed\":[1,\"a\"]}", "wrong-type", "mixed");
    }

    @Test
    void addedFieldsAreDroppedAndToldWhenEvolutionIsOff() {
        Map<String, Object> row = json(false)
                .deserializeFields(
                        "t",
                        ("{" + REQUIRED + ",\"steps\":12,\"env\":{\"a\":[1]}}").getBytes(StandardCharsets.UTF_8),
                        Rows.READER);
        assertThat(row).doesNotContainKeys("steps", "env").containsEntry("record_id", "r1");
        assertThat(dropped).containsExactly(List.of("steps", "env"));
    }

    @Test
    void anAddedFieldNestedDeeperThanAColumnCanBeIsRefusedNotACrash() {
        assertFails(
                "{" + REQUIRED + ",\"deep\":" + "{\"a\":".repeat(900) + "1" + "}".repeat(900) + "}",
                "schema-refused",
                "deep");
        assertFails(
                "{" + REQUIRED + ",\"deep\":" + "[".repeat(900) + "1" + "]".repeat(900) + "}",
                "schema-refused",
                "deep");
        assertFails(
                "{" + REQUIRED + ",\"deep\":" + "[".repeat(40) + "1" + "]".repeat(40) + "}",
                "schema-refused",
                "deeper than 32");
        assertThat(read("{" + REQUIRED + ",\"nested\":" + "[".repeat(30) + "1" + "]".repeat(30) + "}"))
                .containsKey("nested");
    }

    @Test
    void base64PayloadsDecodeAsJacksonsDecoderDoesWhateverTheText() throws Exception {
        // the tape's own decoder takes the usual texts, Jackson's every other: the same bytes or the same refusal
        com.fasterxml.jackson.core.Base64Variant jackson =
                com.fasterxml.jackson.core.Base64Variants.MIME_NO_LINEFEEDS.withReadPadding(
                        com.fasterxml.jackson.core.Base64Variant.PaddingReadBehaviour.PADDING_ALLOWED);
        java.util.SplittableRandom random = new java.util.SplittableRandom(20261205);
        String alphabet = "AQgw/+9z==  !_-é";
        for (int n = 0; n < 5_000; n++) {
            StringBuilder text = new StringBuilder();
            for (int i = random.nextInt(14); i > 0; i--) {
                text.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            String expected;
            try (com.fasterxml.jackson.core.JsonParser in = JsonValues.factory().createParser("\"" + text + "\"")) {
                in.nextToken();
                expected = java.util.HexFormat.of().formatHex(in.getBinaryValue(jackson));
            } catch (Exception e) {
                expected = "refused";
            }
            String actual;
            try {
                actual = String.valueOf(read("{" + REQUIRED + ",\"binary_payload\":\"" + text + "\"}")
                        .get("binary_payload"));
            } catch (SerdeException e) {
                assertThat(e.reason()).isEqualTo("wrong-type");
                actual = "refused";
            }
            assertThat(actual).as("base64 text [%s]", text).isEqualTo(expected);
        }
    }

    @Test
    void floatsReadAsTheJdkParsesTheirText() {
        // every form a writer may use: shortest repr, long expansions, exponents, halfway and subnormal values
        java.util.SplittableRandom random = new java.util.SplittableRandom(20261206);
        List<String> texts = new java.util.ArrayList<>(List.of(
                "1.00000017881393432617187499",
                "1.000000178813934326171875",
                "1.4e-45",
                "7.0e-46",
                "3.4028235e38",
                "3.4028236e38",
                "0.1",
                "1e-50",
                "123456789012345678901234567890",
                "2.9802322387695312E-8"));
        for (int n = 0; n < 2_000; n++) {
            double d = Double.longBitsToDouble(random.nextLong()) % 1e6;
            if (Double.isFinite(d)) {
                texts.add(Double.toString(d));
                texts.add(Float.toString((float) d));
                texts.add(new java.math.BigDecimal(d)
                        .round(new java.math.MathContext(60))
                        .toString());
            }
            texts.add(random.nextInt(1000) + "." + random.nextLong(1L << 62) + "e" + (random.nextInt(90) - 60));
        }
        for (String text : texts) {
            Object read = read("{" + REQUIRED + ",\"output_logprobs\":[" + text + "]}")
                    .get("output_logprobs");
            assertThat(read).as(text).isEqualTo(List.of(Float.parseFloat(text)));
        }
    }

    @Test
    void theTapeDecodesUsualBase64ItselfPaddedOrNot() {
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        for (int n = 0; n < 200; n++) {
            byte[] bytes = new byte[random.nextInt(40)];
            random.nextBytes(bytes);
            String padded = java.util.Base64.getEncoder().encodeToString(bytes);
            for (String text : List.of(padded, padded.replace("=", ""))) {
                byte[] json = ("{\"binary_payload\":\"" + text + "\"}").getBytes(StandardCharsets.UTF_8);
                assertThat(new AvroTape().writeBase64(json, 19, json.length))
                        .as("[%s] decoded without Jackson, up to its closing quote", text)
                        .isEqualTo(json.length - 2);
            }
        }
    }

    private void assertFails(String json, String reason, String mentions) {
        assertThatThrownBy(() -> read(json))
                .as(json.length() > 200 ? json.substring(0, 200) : json)
                .isInstanceOfSatisfying(SerdeException.class, e -> {
                    assertThat(e.reason()).isEqualTo(reason);
                    assertThat(e.recordsFault()).isTrue();
                })
                .hasMessageContaining(mentions);
    }
}
