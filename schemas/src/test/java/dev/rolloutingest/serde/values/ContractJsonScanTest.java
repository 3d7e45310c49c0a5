package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.avro.Schema;
import org.junit.jupiter.api.Test;

/**
 * The scan against the parser, value by value: where the scan reads a value, its tape is the parser's to the byte;
 * where the parser refuses a value, the scan declines it (so the parser's error stands).
 */
class ContractJsonScanTest {
    private final JsonValues parser = new JsonValues(new AddedFields(true, (id, f) -> {}, (id, f) -> {}, 100));
    private final ContractJsonScan scan = new ContractJsonScan();
    private final AvroTape scanned = new AvroTape();
    private final AvroTape parsed = new AvroTape();

    private static final String[] STRINGS = {
        "plain",
        "",
        "line\\nbreak",
        "quote \\\" and \\\\ slash \\/",
        "tab\\t\\b\\f\\r",
        "\\u00e9t\\u00E9",
        "caf\u00e9 \u4e2d\u6587",
        "emoji \ud83d\ude00",
        "pair \\ud83d\\ude00",
        "lone \\ud83d",
        "lone low \\ude00 x",
        "\\u0000 nul",
        "bad \\x escape",
        "raw\ttab",
        "\\u12",
        "end \\"
    };
    private static final String[] FLOATS = {
        "-0.5",
        "0",
        "-0",
        "1",
        "3.0",
        "-2.3456788",
        "-2.3456788063049316",
        "1e-3",
        "1E+3",
        "2.5e-45",
        "3.4028236e38",
        "1.00000017881393432617187499",
        "1.000000178813934326171875",
        "0.1",
        "123456789012345678901",
        "1.5e",
        "01",
        ".5",
        "-",
        "NaN",
        "-Infinity",
        "1.",
        "7e22",
        "7e23",
        "4.4408920985006262e-16",
        "16777217",
        "1e-22",
        "33554431.0",
        "0.30000001192092896"
    };
    private static final String[] WHOLES = {
        "0",
        "-0",
        "7",
        "-12",
        "2147483647",
        "2147483648",
        "-2147483648",
        "9223372036854775807",
        "1.0",
        "3e0",
        "012",
        "1.5",
        "true",
        "\"5\"",
        "123456789012345678"
    };
    private static final String[] CREATED = {
        "1700000000123",
        "\"2026-12-06T02:13:23Z\"",
        "\"2026-12-06T02:13:23.123456789+01:00\"",
        "\"2026-12-06T02:13:23\"",
        "\"2026-02-30T00:00:00Z\"",
        "\"2026-12-06 02:13:23Z\"",
        "-5",
        "1700000000123.456",
        "9223372036854775807",
        "\"2026-12-06T02:13Z\"",
        "\"\\u0032026-12-06T02:13:23Z\""
    };
    private static final String[] PAYLOADS = {
        "\"AAEC/w==\"",
        "\"AAEC/w\"",
        "\"\"",
        "\"AAE\"",
        "\"A\"",
        "\"AA=C\"",
        "[0,1,255]",
        "[256]",
        "null",
        "\"AA\\u0045C\"",
        "\"AA EC\"",
        "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkM=\"",
        "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==\"",
        "\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw\"",
        "\"AAECAwQFBgcI!QoLDA0O\"",
        "\"AAECAwQFBgcICQ=\"",
        "\"AAECAwQF\\/gcICQ==\""
    };
    private static final String[] METADATA = {
        "{}",
        "{\"k\":\"v\"}",
        "{\"k\":1.50,\"b\":false,\"t\":true}",
        "{\"k\":\"a\",\"k\":\"b\"}",
        "{\"k\\n\":\"v\\u00e9\"}",
        "{\"k\":null}",
        "{\"k\":[1]}",
        "{\"k\":-0}",
        "{\"k\":1e5}",
        "null"
    };

    @Test
    void theProducersValuesAreReadByTheScanToTheParsersTape() {
        RolloutGenerator generator = new RolloutGenerator("scan", 300, 11);
        for (int i = 0; i < 200; i++) {
            Rollout rollout = generator.rollout(i, i % 3);
            byte[] json = RolloutValues.json(rollout);
            assertThat(compare(json))
                    .as(new String(json, StandardCharsets.UTF_8))
                    .isTrue();
        }
    }

    @Test
    void everyValueTheScanReadsGivesTheParsersTapeAndEveryValueTheParserRefusesIsDeclined() {
        SplittableRandom random = new SplittableRandom(52);
        int read = 0;
        int total = 0;
        for (int i = 0; i < 20_000; i++) {
            String json = variant(random);
            byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
            if (random.nextInt(4) == 0) {
                bytes = mutated(bytes, random);
            }
            total++;
            if (compare(bytes)) {
                read++;
            }
        }
        // the comparison means something only if both kinds of value came often
        assertThat(read).as("values the scan read").isBetween(total / 10, total - total / 10);
    }

    @Test
    void aDecimalWhoseDoubleFallsHalfwayBetweenTwoFloatsRoundsAsTheJdkParsesIt() {
        // each text's nearest double lies exactly between two floats, the text itself to one side: rounding the
        // double to float would pick the wrong one
        for (String text : List.of("8.44312334060669", "1.19717675447464", "1.34929734793429E+17")) {
            byte[] json = ("{\"record_id\":\"r\",\"experiment\":\"e\",\"rollout_id\":\"ro\",\"sequence_order\":1,"
                            + "\"role\":\"user\",\"created_at\":1,\"output_logprobs\":[" + text + "],\"reward\":" + text
                            + "}")
                    .getBytes(StandardCharsets.UTF_8);
            assertThat((float) (double) Double.parseDouble(text)).isNotEqualTo(Float.parseFloat(text));
            assertThat(compare(json)).as(text).isTrue();
        }
    }

    @Test
    void aStringOrKeyPastTheParsersReadLimitsIsDeclinedSoTheParserRefusesIt() {
        String required = "\"record_id\":\"r\",\"experiment\":\"e\",\"rollout_id\":\"ro\",\"sequence_order\":1,"
                + "\"role\":\"user\",\"created_at\":1";
        String escapedLong = "\\n" + "a".repeat(20_000_001); // past 20,000,000 characters once decoded
        String longKey = "k".repeat(50_001); // past 50,000 bytes
        for (String json : List.of(
                "{" + required + ",\"content\":\"" + escapedLong + "\"}",
                "{" + required + ",\"metadata\":{\"" + longKey + "\":\"v\"}}")) {
            byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
            assertThat(scan.read(bytes, 0, bytes.length, scanned)).isFalse();
            assertThat(compare(bytes)).isFalse();
        }
        // at the limits both read them, to the same tape
        String atLimitKey = "{" + required + ",\"metadata\":{\"" + "k".repeat(50_000) + "\":\"v\"}}";
        assertThat(compare(atLimitKey.getBytes(StandardCharsets.UTF_8))).isTrue();
    }

    /** True when the scan read the value (and its tape is the parser's); false when it declined. */
    private boolean compare(byte[] json) {
        boolean scannedIt = scan.read(json, 0, json.length, scanned);
        RuntimeException refused = null;
        try {
            parser.readByParser(json, 0, json.length, Map.of(), AddedFields.NO_SCHEMA_ID, parsed);
        } catch (RuntimeException e) {
            refused = e;
        }
        String text = new String(json, StandardCharsets.UTF_8);
        if (!scannedIt) {
            assertThat(scanned.length())
                    .as("a declined value leaves the tape empty: " + text)
                    .isZero();
            return false;
        }
        assertThat(refused)
                .as("the scan read a value the parser refuses: " + text)
                .isNull();
        assertThat(names(scanned.order(), scanned.fieldCount()))
                .as(text)
                .isEqualTo(names(parsed.order(), parsed.fieldCount()));
        assertThat(scanned.written()).as(text).isEqualTo(parsed.written());
        return true;
    }

    private static List<String> names(Schema.Field[] order, int count) {
        return Arrays.stream(order, 0, count).map(Schema.Field::name).toList();
    }

    private static String variant(SplittableRandom random) {
        List<String> fields = new ArrayList<>();
        String[] ws = {"", " ", "\n  ", "\t", "\r\n"};
        String space = ws[random.nextInt(ws.length)];
        fields.add(pair("record_id", pick(random, STRINGS, "\"r-", "\"")));
        fields.add(pair("experiment", "\"" + pick(random, STRINGS) + "\""));
        fields.add(pair("rollout_id", "\"ro\""));
        fields.add(pair("sequence_order", random.nextInt(3) == 0 ? pick(random, WHOLES) : "2"));
        fields.add(pair("role", "\"user\""));
        fields.add(pair("created_at", pick(random, CREATED)));
        if (random.nextBoolean()) {
            fields.add(pair("problem_id", random.nextInt(4) == 0 ? "null" : "\"" + pick(random, STRINGS) + "\""));
        }
        if (random.nextBoolean()) {
            fields.add(pair("content", random.nextInt(4) == 0 ? "null" : "\"" + pick(random, STRINGS) + "\""));
        }
        if (random.nextBoolean()) {
            fields.add(pair("input_tokens", array(random, WHOLES, space)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("output_tokens", random.nextInt(5) == 0 ? "null" : array(random, WHOLES, space)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("output_logprobs", array(random, FLOATS, space)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("reward", random.nextInt(5) == 0 ? "null" : pick(random, FLOATS)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("advantage", pick(random, FLOATS)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("policy_version", random.nextInt(5) == 0 ? "null" : pick(random, WHOLES)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("include_in_training", random.nextInt(6) == 0 ? "1" : random.nextBoolean() + ""));
        }
        if (random.nextBoolean()) {
            fields.add(pair("metadata", pick(random, METADATA)));
        }
        if (random.nextBoolean()) {
            fields.add(pair("binary_payload", pick(random, PAYLOADS)));
        }
        if (random.nextInt(20) == 0) {
            fields.add(pair("added_score", "0.5")); // beyond the contract: the parser's
        }
        if (random.nextInt(20) == 0) {
            fields.add(fields.get(random.nextInt(fields.size()))); // a field twice
        }
        if (random.nextInt(20) == 0) {
            fields.remove(random.nextInt(fields.size())); // a required one may go
        }
        for (int i = fields.size() - 1; i > 0; i--) { // any order
            int j = random.nextInt(i + 1);
            String f = fields.get(i);
            fields.set(i, fields.get(j));
            fields.set(j, f);
        }
        String object =
                "{" + space + String.join("," + space, fields).replace(COLON, space + ":" + space) + space + "}";
        return random.nextInt(10) == 0 ? space + object + space : object;
    }

    /** Stands for a name's colon until the value's spacing is known (no value holds it). */
    private static final String COLON = "\u0001";

    private static String pair(String name, String value) {
        return "\"" + name + "\"" + COLON + value;
    }

    /** Mostly one of the first three (each list starts with values both read), else any. */
    private static String pick(SplittableRandom random, String[] values) {
        return values[random.nextInt(5) == 0 ? random.nextInt(values.length) : random.nextInt(3)];
    }

    private static String pick(SplittableRandom random, String[] values, String before, String after) {
        return before + pick(random, values) + after;
    }

    private static String array(SplittableRandom random, String[] values, String space) {
        List<String> items = new ArrayList<>();
        int n = random.nextInt(5);
        for (int i = 0; i < n; i++) {
            items.add(random.nextInt(4) == 0 ? pick(random, values) : values[random.nextInt(4)]);
        }
        return "[" + space + String.join("," + space, items) + space + "]";
    }

    /** A byte changed, cut, dropped or doubled: most such values are malformed. */
    private static byte[] mutated(byte[] bytes, SplittableRandom random) {
        int at = random.nextInt(bytes.length);
        return switch (random.nextInt(4)) {
            case 0 -> {
                byte[] b = bytes.clone();
                byte[] pool = {'"', '\\', ',', ':', '{', '}', '[', ']', ' ', '0', 'e', '-', (byte) 0xC3, (byte) 0xFF, 0
                };
                b[at] = pool[random.nextInt(pool.length)];
                yield b;
            }
            case 1 -> Arrays.copyOf(bytes, at);
            case 2 -> {
                byte[] b = new byte[bytes.length - 1];
                System.arraycopy(bytes, 0, b, 0, at);
                System.arraycopy(bytes, at + 1, b, at, bytes.length - at - 1);
                yield b;
            }
            default -> {
                byte[] b = new byte[bytes.length + 1];
                System.arraycopy(bytes, 0, b, 0, at + 1);
                System.arraycopy(bytes, at, b, at + 1, bytes.length - at);
                yield b;
            }
        };
    }
}
