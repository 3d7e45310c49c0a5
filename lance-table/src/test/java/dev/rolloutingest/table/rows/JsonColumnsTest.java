package dev.rolloutingest.table.rows;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.FieldReader;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.serde.values.RolloutValues;
import dev.rolloutingest.serde.values.ValueDeserializer;
import dev.rolloutingest.serde.values.ValueFormat;
import dev.rolloutingest.serde.values.ValueFormats;
import dev.rolloutingest.table.generations.GenerationBatch;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/**
 * JSON values written straight into a batch's columns (the scan's {@link FieldReader#columns}) hold exactly the rows
 * the same values hold read through the contract's Avro encoding ({@link RowWriter#decode}), value by value: the
 * producers' values, hand-made edge cases, and generated and mutated ones, among them values the scan gives up
 * half-way (a field beyond the contract, a field twice) and values the parser then refuses, whose half-written row
 * the next value must overwrite whole.
 */
class JsonColumnsTest {
    private static final Instant INGESTED = Instant.parse("2026-12-07T00:00:00.123456Z");
    private static final String REQUIRED = "\"record_id\":\"r-%d\",\"experiment\":\"e\",\"rollout_id\":\"ro\","
            + "\"sequence_order\":1,\"role\":\"user\",\"created_at\":1700000000123";

    private final ValueDeserializer json = new ValueDeserializer(
            ValueFormats.all(ValueFormat.JSON), null, null, true, (id, f) -> {}, (id, f) -> {}, (id, f) -> {}, 100);

    @Test
    void theProducersValuesGiveTheRowsTheAvroEncodingGives() {
        RolloutGenerator generator = new RolloutGenerator("columns", 300, 11);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            Rollout rollout = generator.rollout(i, i % 3);
            if (i % 5 == 1) {
                rollout.setProblemId(null);
                rollout.setContent(null);
                rollout.setReward(null);
                rollout.setPolicyVersion(null);
                rollout.setBinaryPayload(null);
            }
            values.add(RolloutValues.json(rollout));
        }
        assertThat(compare(values)).isEqualTo(values.size());
    }

    @Test
    void edgeCasesAndHalfReadValuesGiveTheSameRows() {
        List<String> values = List.of(
                "{" + REQUIRED + "}",
                "{" + REQUIRED + ",\"problem_id\":null,\"content\":null,\"reward\":null,\"advantage\":null,"
                        + "\"policy_version\":null,\"binary_payload\":null,\"metadata\":null,\"input_tokens\":null}",
                "{" + REQUIRED + ",\"content\":\"line\\nbreak \\u00e9 \\ud83d\\ude00 caf\u00e9\",\"problem_id\":\"\"}",
                "{" + REQUIRED + ",\"metadata\":{\"zeta\":\"1\",\"alpha\":2.50,\"mid\":true,\"k\\n\":\"v\\u00e9\"}}",
                "{" + REQUIRED + ",\"metadata\":{\"k\":\"a\",\"k\":\"b\"},\"include_in_training\":false}",
                "{" + REQUIRED + ",\"metadata\":{\"k\":\"a\",\"j\":\"x\",\"k\":\"b\"}}",
                "{" + REQUIRED + ",\"binary_payload\":\"AAEC/w==\",\"output_logprobs\":[-0.5,1e-3,0.1],"
                        + "\"input_tokens\":[],\"output_tokens\":[1,-2,2147483647],\"reward\":3,\"advantage\":-2.25,"
                        + "\"policy_version\":9223372036854775807}",
                "{" + REQUIRED + ",\"binary_payload\":\"\",\"created_at\":\"2026-12-06T02:13:23.123456+01:00\"}",
                " {\n  " + REQUIRED + " ,\t\"role\" : \"tool\" }\r\n".replace("\"role\":\"user\",", ""),
                // the scan gives these up after writing contract fields; the parser reads them
                "{" + REQUIRED + ",\"content\":\"c\",\"score_added\":0.5}",
                "{" + REQUIRED + ",\"binary_payload\":[0,1,255]}",
                "{" + REQUIRED + ",\"binary_payload\":\"AA\\u0045C\"}",
                "{" + REQUIRED + ",\"sequence_order\":2}", // twice: the parser refuses it
                "{" + REQUIRED + ",\"input_tokens\":[1,2,3],\"metadata\":{\"x\":\"y\"},\"content\":5}",
                "{" + REQUIRED + ",\"metadata\":{\"__rollout_deleted\":\"1\"}}",
                "{" + REQUIRED + ",\"output_tokens\":[4,5,6],\"binary_payload\":\"AAEC/w==\",\"reward\":0.5}");
        List<byte[]> bytes = new ArrayList<>();
        for (int i = 0; i < values.size(); i++) {
            bytes.add(values.get(i).formatted(i).getBytes(StandardCharsets.UTF_8));
        }
        assertThat(compare(bytes)).isBetween(values.size() - 5, values.size() - 1);
    }

    @Test
    void generatedAndMutatedValuesGiveTheSameRows() {
        SplittableRandom random = new SplittableRandom(7);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < 3_000; i++) {
            byte[] value = variant(random, i).getBytes(StandardCharsets.UTF_8);
            if (random.nextInt(5) == 0) {
                value[random.nextInt(value.length)] = (byte) MUTATIONS.charAt(random.nextInt(MUTATIONS.length()));
            }
            values.add(value);
        }
        // the comparison means something only if both read and refused values came often
        assertThat(compare(values)).isBetween(values.size() / 2, values.size() - values.size() / 20);
    }

    /**
     * Stages every value into two batches, one through the columns and one through the Avro encoding, committing
     * what each accepts; asserts the same values were accepted, with the same keys and payload sizes, and the same
     * rows. Returns how many were accepted.
     */
    private int compare(List<byte[]> values) {
        try (RootAllocator allocator = new RootAllocator();
                GenerationBatch direct = GenerationBatch.create(allocator);
                GenerationBatch encoded = GenerationBatch.create(allocator)) {
            int accepted = 0;
            for (int i = 0; i < values.size(); i++) {
                byte[] value = values.get(i);
                long offset = i;
                RowWriter.Staged viaColumns = stage(value, direct.rowReader(2, offset, INGESTED));
                FieldReader<RowWriter.Staged> avroOnly = (in, order) -> encoded.stage(in, order, 2, offset, INGESTED);
                RowWriter.Staged viaEncoding = stage(value, avroOnly);
                String text = new String(value, StandardCharsets.UTF_8);
                assertThat(viaColumns).as(text).isEqualTo(viaEncoding);
                if (viaColumns != null) {
                    direct.commitStaged();
                    encoded.commitStaged();
                    accepted++;
                }
            }
            assertThat(ArrowRows.fromRoot(direct.sealedRoot()))
                    .isEqualTo(ArrowRows.fromRoot(encoded.sealedRoot()))
                    .hasSize(accepted);
            return accepted;
        }
    }

    /** The staged row, or null when the value is refused. */
    private RowWriter.Staged stage(byte[] value, FieldReader<RowWriter.Staged> reader) {
        try {
            return json.deserializeFields("rollouts", value, reader);
        } catch (SerdeException refused) {
            return null;
        }
    }

    private static final String MUTATIONS = "{}[]\",:0a\\ -.eu";

    private static final String[] STRINGS = {
        "plain",
        "",
        "tab\\t\\\"q\\\" \\\\",
        "\\u00e9t\\u00E9",
        "caf\u00e9 \u4e2d\u6587 \ud83d\ude00",
        "pair \\ud83d\\ude00"
    };
    private static final String[] NUMBERS = {"0", "-0.5", "1e-3", "3.4028235e38", "-2.3456788063049316", "7", "1.5E+2"};
    private static final String[] PAYLOADS = {"\"AAEC/w==\"", "\"AAEC/w\"", "\"\"", "\"AAE\"", "[1,2]", "null"};
    private static final String[] METADATA = {
        "{}", "{\"k\":\"v\"}", "{\"b\":1.50,\"a\":false,\"c\":true}", "{\"k\":\"a\",\"k\":\"b\"}", "null"
    };

    private static String variant(SplittableRandom random, int i) {
        List<String> fields = new ArrayList<>();
        fields.add("\"record_id\":\"r-" + i + pick(random, STRINGS) + "\"");
        fields.add("\"experiment\":\"" + pick(random, STRINGS) + "\"");
        fields.add("\"rollout_id\":\"ro\"");
        fields.add("\"sequence_order\":" + random.nextInt(-5, 5));
        fields.add("\"role\":\"user\"");
        fields.add("\"created_at\":" + (random.nextBoolean() ? "1700000000123" : "\"2026-12-06T02:13:23.5Z\""));
        optional(random, fields, "problem_id", "\"" + pick(random, STRINGS) + "\"");
        optional(random, fields, "content", "\"" + pick(random, STRINGS) + "\"");
        optional(random, fields, "input_tokens", "[" + random.nextInt(100) + "," + random.nextInt(100) + "]");
        optional(random, fields, "output_tokens", "[]");
        optional(random, fields, "output_logprobs", "[" + pick(random, NUMBERS) + "," + pick(random, NUMBERS) + "]");
        optional(random, fields, "reward", pick(random, NUMBERS));
        optional(random, fields, "advantage", pick(random, NUMBERS));
        optional(random, fields, "policy_version", String.valueOf(random.nextLong()));
        optional(random, fields, "include_in_training", random.nextBoolean() ? "true" : "false");
        optional(random, fields, "metadata", pick(random, METADATA));
        optional(random, fields, "binary_payload", pick(random, PAYLOADS));
        if (random.nextInt(10) == 0) {
            fields.add("\"added_score\":" + random.nextInt(9));
        }
        if (random.nextInt(20) == 0) {
            fields.add(fields.get(random.nextInt(fields.size()))); // a field twice
        }
        Collections.shuffle(fields, new java.util.Random(random.nextLong()));
        String space = random.nextBoolean() ? "" : " \n";
        return "{" + space + String.join("," + space, fields) + space + "}";
    }

    private static void optional(SplittableRandom random, List<String> fields, String name, String value) {
        int choice = random.nextInt(4);
        if (choice < 2) {
            fields.add("\"" + name + "\":" + value);
        } else if (choice == 2) {
            fields.add("\"" + name + "\":null");
        }
    }

    private static String pick(SplittableRandom random, String[] from) {
        return from[random.nextInt(from.length)];
    }
}
