package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.WireFormat;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.AddedValues;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.function.BiConsumer;
import java.util.stream.Stream;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kind of bad or tricky record a hostile producer sends, on a real broker, registry and table: one run of the
 * pipeline takes them all, interleaved with 1,000 valid rollouts, and each kind is a case of its own: it lands exactly
 * (the newest value of its key, read back as sent) or is dead-lettered once with its reason and the producer's bytes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BadRecordBatteryIT {
    private static final Path ROOT = Path.of("target", "it-bad-records").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-bad-records");

    /** One record the test sends: its bytes, and what must become of it. */
    private record Sent(
            String kind,
            byte[] key,
            byte[] value,
            RecordHeaders headers,
            Set<String> dlqReasons,
            String landsAs,
            BiConsumer<RolloutTable, RolloutRow> readsBack) {
        static Sent bad(String kind, byte[] key, byte[] value, String... reasons) {
            return new Sent(kind, key, value, new RecordHeaders(), Set.of(reasons), null, null);
        }

        static Sent good(String kind, Rollout rollout, byte[] value) {
            return new Sent(
                    kind,
                    bytes(rollout.getRecordId()),
                    value,
                    new RecordHeaders(),
                    Set.of(),
                    rollout.getRecordId(),
                    (table, row) -> {});
        }

        /** What else its row must show when read back. */
        Sent reading(BiConsumer<RolloutTable, RolloutRow> check) {
            return new Sent(kind, key, value, headers, dlqReasons, landsAs, check);
        }
    }

    private final List<Sent> tricky = new ArrayList<>();
    private final List<Sent> sends = new ArrayList<>();
    private final Map<Long, ConsumerRecord<byte[], byte[]>> dead = new TreeMap<>();
    private final List<Long> deadLetteredTwice = new ArrayList<>();
    private final Map<String, Rollout> expected = new LinkedHashMap<>();
    private Sent spoofedBad;
    private String input;
    private RolloutTable table;
    private double droppedFieldRecords;
    private double refusedRecords;

    @BeforeAll
    void sendTheBatteryAndSealIt() throws Exception {
        String run = "bad-" + UUID.randomUUID().toString().substring(0, 8);
        input = run + "-rollouts";
        cluster.createRunTopics(run, input, 1);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Map<String, Object> props = cluster.appProps(run, input, work);
        props.putAll(Map.of(
                "rollout.seal.max.rows",
                "100",
                "rollout.seal.max.age.ms",
                "500",
                "rollout.seal.check.interval.ms",
                "100",
                "rollout.max.payload.bytes",
                "100000",
                "streams.commit.interval.ms",
                "200",
                "rollout.input.keyless.records", // keyless records land by default; this battery refuses them
                "reject"));

        SchemaRegistryClient registry = new SchemaRegistryClient(SerdeConfig.from(
                Map.of("schema.registry.url", cluster.registry().confluentUrl())));
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", cluster.registry().confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("battery", 64, 5);
        byte[] good = serializer.serialize(input, generator.rollout(0, 0));
        int rolloutId = java.nio.ByteBuffer.wrap(good, 1, 4).getInt();

        tricky.add(Sent.bad("text", bytes("t"), bytes("just some text, not Avro"), "bad-magic-byte"));
        byte[] wrongMagic = good.clone();
        wrongMagic[0] = 1;
        tricky.add(Sent.bad("wrong magic byte", bytes("battery-0"), wrongMagic, "bad-magic-byte"));
        tricky.add(Sent.bad(
                "unknown schema id",
                bytes("battery-0"),
                WireFormat.frame(987_654, new byte[] {2, 4}),
                "unknown-schema-id"));
        tricky.add(
                Sent.bad("truncated", bytes("battery-0"), java.util.Arrays.copyOf(good, good.length / 2), "not-avro"));
        byte[] random = new byte[300];
        new Random(7).nextBytes(random);
        tricky.add(Sent.bad(
                "random body",
                bytes("r"),
                WireFormat.frame(rolloutId, random),
                "not-avro",
                "trailing-bytes",
                "key-mismatch",
                "missing-record-id"));
        tricky.add(Sent.bad("empty value", bytes("e"), new byte[0], "truncated"));
        tricky.add(Sent.bad("no key and no value", null, null, "null-value")); // a key + no value is a delete
        Rollout noKey = tricked(generator, "no-key");
        tricky.add(Sent.bad("null key", null, serializer.serialize(input, noKey), "missing-key"));
        Rollout otherKey = tricked(generator, "key-differs");
        tricky.add(Sent.bad(
                "key differs from record_id",
                bytes("something-else"),
                serializer.serialize(input, otherKey),
                "key-mismatch"));
        Rollout emptyId = tricked(generator, "");
        tricky.add(Sent.bad("empty record_id", bytes(""), serializer.serialize(input, emptyId), "missing-record-id"));
        Schema intId = SchemaBuilder.record("Rollout")
                .namespace("dev.rolloutingest.schemas")
                .fields()
                .requiredInt("record_id")
                .requiredString("experiment")
                .endRecord();
        GenericRecord intRecord = new GenericData.Record(intId);
        intRecord.put("record_id", 5);
        intRecord.put("experiment", "battery");
        tricky.add(Sent.bad(
                "writer schema with record_id as int",
                bytes("5"),
                WireFormat.frame(registry.register(run + "-other-value", intId), avro(intId, intRecord)),
                "schema-incompatible"));
        Schema noRole = SchemaBuilder.record("Rollout")
                .namespace("dev.rolloutingest.schemas")
                .fields()
                .requiredString("record_id")
                .requiredString("experiment")
                .endRecord();
        GenericRecord noRoleRecord = new GenericData.Record(noRole);
        noRoleRecord.put("record_id", "battery-no-role");
        noRoleRecord.put("experiment", "battery");
        tricky.add(Sent.bad(
                "writer schema missing required fields",
                bytes("battery-no-role"),
                WireFormat.frame(registry.register(run + "-third-value", noRole), avro(noRole, noRoleRecord)),
                "schema-incompatible"));
        Rollout huge = new RolloutGenerator("battery", 150_000, 1).rollout(900_000, 0);
        tricky.add(Sent.bad(
                "payload over the limit",
                bytes(huge.getRecordId()),
                serializer.serialize(input, huge),
                "payload-too-large"));
        byte[] trailing = java.util.Arrays.copyOf(good, good.length + 1);
        tricky.add(Sent.bad("trailing bytes", bytes("battery-0"), trailing, "trailing-bytes"));
        spoofedBad = Sent.bad(
                "bad record with a spoofed DLQ header", bytes("s"), bytes("not avro at all"), "bad-magic-byte");
        spoofedBad.headers().add("rollout.dlq.reason", bytes("all-fine"));
        tricky.add(spoofedBad);

        Map<String, String> oddIds = new LinkedHashMap<>();
        oddIds.put("SQL", "sql-'; DROP TABLE rollouts; --");
        oddIds.put("URL characters", "url-a/b?c=d&e#f%20g+h");
        oddIds.put("emoji", "emoji-\uD83D\uDE00\uD83D\uDE80");
        oddIds.put("a NUL byte", "nul-\u0000-byte");
        oddIds.put("CJK", "cjk-\u4E2D\u6587");
        oddIds.put("right-to-left text", "rtl-\u200F\u05E9\u05DC\u05D5\u05DD");
        oddIds.put("10 KiB", "long-" + "y".repeat(10_240));
        oddIds.forEach((what, id) -> {
            Rollout rollout = tricked(generator, id);
            rollout.setExperiment("exp/" + id.substring(0, Math.min(40, id.length())));
            Sent sent = Sent.good("record_id with " + what, rollout, serializer.serialize(input, rollout));
            tricky.add(
                    id.startsWith("emoji-")
                            ? sent.reading((table, row) -> assertThat(table.list(
                                            ListQuery.all(10).withExperiment("exp/emoji-\uD83D\uDE00\uD83D\uDE80")))
                                    .as("found by its experiment")
                                    .hasSize(1))
                            : sent);
        });
        Rollout nan = tricked(generator, "nan-reward");
        nan.setReward(Float.NaN);
        tricky.add(Sent.good("NaN reward", nan, serializer.serialize(input, nan))
                .reading((table, row) -> assertThat(row.rollout().getReward()).isNaN()));
        Rollout inf = tricked(generator, "inf-reward");
        inf.setReward(Float.POSITIVE_INFINITY);
        inf.setAdvantage(Float.NEGATIVE_INFINITY);
        tricky.add(Sent.good("infinite reward and advantage", inf, serializer.serialize(input, inf))
                .reading(
                        (table, row) -> assertThat(row.rollout().getAdvantage()).isEqualTo(Float.NEGATIVE_INFINITY)));
        Instant earliest = Instant.ofEpochSecond(
                Math.floorDiv(Long.MIN_VALUE, 1_000_000L), Math.floorMod(Long.MIN_VALUE, 1_000_000L) * 1_000L);
        Instant latest = Instant.ofEpochSecond(
                Math.floorDiv(Long.MAX_VALUE, 1_000_000L), Math.floorMod(Long.MAX_VALUE, 1_000_000L) * 1_000L);
        Rollout early = tricked(generator, "created-at-min");
        early.setCreatedAt(earliest);
        tricky.add(Sent.good("created_at = Long.MIN_VALUE micros", early, serializer.serialize(input, early))
                .reading(
                        (table, row) -> assertThat(row.rollout().getCreatedAt()).isEqualTo(earliest)));
        Rollout late = tricked(generator, "created-at-max");
        late.setCreatedAt(latest);
        tricky.add(Sent.good("created_at = Long.MAX_VALUE micros", late, serializer.serialize(input, late)));
        Rollout hostile = tricked(generator, "hostile-headers");
        Sent hostileHeaders = Sent.good("hostile headers", hostile, serializer.serialize(input, hostile));
        for (int i = 0; i < 200; i++) {
            hostileHeaders.headers().add("h" + i, new byte[] {(byte) i, 0, (byte) 0xff});
        }
        hostileHeaders.headers().add("big", new byte[64 * 1024]);
        hostileHeaders.headers().add("rollout.dlq.reason", bytes("spoofed"));
        tricky.add(hostileHeaders);
        for (int version = 1; version <= 3; version++) {
            Rollout again = tricked(generator, "same-id-three-times");
            again.setPolicyVersion((long) version);
            tricky.add(Sent.good(
                    "same record_id three times (version " + version + ")", again, serializer.serialize(input, again)));
        }
        Schema evolved = evolvedRolloutSchema(new Schema.Field(
                "logprob_mask",
                Schema.createUnion(Schema.create(Schema.Type.NULL), Schema.create(Schema.Type.STRING)),
                "added by a newer producer",
                Schema.Field.NULL_DEFAULT_VALUE));
        Rollout evolvedRollout = tricked(generator, "evolved-schema");
        int evolvedId = registry.register(input + "-value", evolved);
        tricky.add(Sent.good(
                        "evolved producer schema with an extra field",
                        evolvedRollout,
                        WireFormat.frame(evolvedId, withAddedValues(evolvedRollout, out -> {
                            out.writeIndex(1); // logprob_mask: the string branch of the union
                            out.writeString("mask-v2");
                        })))
                .reading((table, row) -> assertThat(row.added())
                        .as("the evolved schema's extra field is a column of the table, with its value")
                        .containsEntry("logprob_mask", "mask-v2")));
        // Fields the table cannot take: each record refused alone (schema-refused), the partition goes on.
        Schema provenance =
                evolvedRolloutSchema(new Schema.Field("source_offset", Schema.create(Schema.Type.LONG), null, 0L));
        int provenanceId = registry.register(run + "-provenance-value", provenance);
        Rollout clash = tricked(generator, "provenance-name");
        tricky.add(Sent.bad(
                "an added field named like a provenance column",
                bytes(clash.getRecordId()),
                WireFormat.frame(provenanceId, withAddedValues(clash, out -> out.writeLong(5))),
                "schema-refused"));
        Schema mixed = evolvedRolloutSchema(new Schema.Field(
                "mixed",
                Schema.createUnion(Schema.create(Schema.Type.INT), Schema.create(Schema.Type.STRING)),
                null,
                0));
        int mixedId = registry.register(run + "-mixed-value", mixed);
        Rollout union = tricked(generator, "union-of-types");
        tricky.add(Sent.bad(
                "an added field that is a union of two types",
                bytes(union.getRecordId()),
                WireFormat.frame(mixedId, withAddedValues(union, out -> {
                    out.writeIndex(0);
                    out.writeInt(3);
                })),
                "schema-refused"));
        Schema maskAsInt =
                evolvedRolloutSchema(new Schema.Field("logprob_mask", Schema.create(Schema.Type.INT), null, 0));
        int maskAsIntId = registry.register(run + "-mask-int-value", maskAsInt);
        Rollout retyped = tricked(generator, "retyped-field");
        // after the string column exists (in this batch or the base): an int cannot be promoted to a string;
        // refused when decoded, or at the seal when this batch met the field before the base had its column
        tricky.add(Sent.bad(
                "an added field whose type the table's column cannot take",
                bytes(retyped.getRecordId()),
                WireFormat.frame(maskAsIntId, withAddedValues(retyped, out -> out.writeInt(1))),
                "schema-refused",
                "unwritable"));
        assertThat(tricky.size()).as("kinds of input").isGreaterThanOrEqualTo(28);
        assertThat(tricky.stream().map(Sent::kind).distinct().count())
                .as("each kind named once")
                .isEqualTo(tricky.size());

        // 1,000 valid rollouts with the tricky ones interleaved.
        int valid = 1_000;
        int every = valid / tricky.size();
        for (int i = 0, t = 0; i < valid; i++) {
            Rollout rollout = generator.rollout(i, 0);
            sends.add(Sent.good("valid", rollout, serializer.serialize(input, rollout)));
            if (i % every == every - 1 && t < tricky.size()) {
                sends.add(tricky.get(t++));
            }
        }
        tricky.stream().filter(s -> !sends.contains(s)).forEach(sends::add);

        try (IngestApp app = new IngestApp(IngestConfig.of(props)).start();
                KafkaProducer<byte[], byte[]> producer = cluster.rawProducer()) {
            for (Sent sent : sends) {
                producer.send(new ProducerRecord<>(input, null, sent.key(), sent.value(), sent.headers()))
                        .get();
            }
            cluster.awaitAllSealed(run, input, 1, tableDir, run + "-generations", 120);
            droppedFieldRecords = app.registry()
                    .find("rollout.ingest.dropped.fields.records")
                    .counter()
                    .count();
            refusedRecords = app.registry().find("rollout.ingest.schema.refused.records").counters().stream()
                    .mapToDouble(c -> c.count())
                    .sum();
        }
        for (ConsumerRecord<byte[], byte[]> record : cluster.readAllBytes(run + "-dlq")) {
            long offset = Long.parseLong(IngestCluster.firstHeader(record, "rollout.dlq.source.offset"));
            if (dead.put(offset, record) != null) {
                deadLetteredTwice.add(offset);
            }
        }
        for (Sent sent : sends) {
            if (sent.landsAs() != null) {
                expected.put(sent.landsAs(), decodeOwn(sent));
            }
        }
        table = RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry());
    }

    @AfterAll
    void closeTheTable() {
        if (table != null) {
            table.close();
        }
    }

    Stream<String> kinds() {
        return tricky.stream().map(Sent::kind);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("kinds")
    void eachKindLandsExactlyOrIsDeadLetteredOnceWithItsReason(String kind) {
        Sent sent =
                tricky.stream().filter(s -> s.kind().equals(kind)).findFirst().orElseThrow();
        ConsumerRecord<byte[], byte[]> letter = dead.get((long) sends.indexOf(sent));
        if (sent.dlqReasons().isEmpty()) {
            assertThat(letter)
                    .as(
                            "dead-lettered as %s",
                            letter == null ? null : IngestCluster.firstHeader(letter, "rollout.dlq.reason"))
                    .isNull();
            String id = sent.landsAs();
            RolloutRow row = table.get(id)
                    .orElseThrow(
                            () -> new AssertionError("not readable: " + id.substring(0, Math.min(40, id.length()))));
            Rollout newest = expected.get(id);
            assertThat(row.rollout().getPolicyVersion()).isEqualTo(newest.getPolicyVersion());
            assertThat(row.rollout().getCreatedAt()).isEqualTo(newest.getCreatedAt());
            assertThat(row.rollout().getExperiment()).isEqualTo(newest.getExperiment());
            sent.readsBack().accept(table, row);
        } else {
            assertThat(letter).as("in the DLQ").isNotNull();
            assertThat(IngestCluster.firstHeader(letter, "rollout.dlq.reason")).isIn(sent.dlqReasons());
            assertThat(letter.value())
                    .as("the DLQ value is the producer's bytes")
                    .isEqualTo(sent.value());
        }
    }

    @Test
    void theValidRolloutsAroundThemAllLandAndNothingElseDoes() {
        assertThat(table.countRows()).isEqualTo(expected.size());
        expected.forEach((id, rollout) -> assertThat(table.get(id))
                .as("readable: %s", id.substring(0, Math.min(40, id.length())))
                .hasValueSatisfying(
                        row -> assertThat(row.rollout().getPolicyVersion()).isEqualTo(rollout.getPolicyVersion())));
        long validDeadLettered = dead.keySet().stream()
                .filter(offset -> sends.get((int) (long) offset).dlqReasons().isEmpty())
                .count();
        assertThat(validDeadLettered).as("valid records dead-lettered").isZero();
    }

    @Test
    void noOffsetIsDeadLetteredTwice() {
        assertThat(deadLetteredTwice).isEmpty();
    }

    @Test
    void aProducersOwnReasonHeaderIsKeptUnderAnotherNameAndOursComesLast() {
        ConsumerRecord<byte[], byte[]> spoofed = dead.get((long) sends.indexOf(spoofedBad));
        assertThat(IngestCluster.firstHeader(spoofed, "producer.rollout.dlq.reason"))
                .isEqualTo("all-fine");
        assertThat(lastHeader(spoofed, "rollout.dlq.reason")).isEqualTo("bad-magic-byte");
    }

    @Test
    void noFieldIsDroppedAndRefusedRecordsAreCountedBySchemaId() {
        assertThat(droppedFieldRecords)
                .as("nothing dropped: the evolved schema's extra field is a column")
                .isZero();
        assertThat(refusedRecords).as("refused records counted by schema id").isGreaterThanOrEqualTo(2);
    }

    @Test
    void thePartitionKeepsSealingPastEveryBadRecord() {
        var pending = table.generations().pending(ShardId.of(input, 0));
        assertThat(pending.get(pending.size() - 1).lastOffset()).isEqualTo(sends.size() - 1);
    }

    private static Rollout tricked(RolloutGenerator generator, String id) {
        Rollout rollout = generator.rollout(id.hashCode() & 0xffff, 0);
        rollout.setRecordId(id.isEmpty() ? "" : "battery-" + id);
        if (id.startsWith("sql-")
                || id.startsWith("url-")
                || id.startsWith("emoji-")
                || id.startsWith("nul-")
                || id.startsWith("cjk-")
                || id.startsWith("rtl-")
                || id.startsWith("long-")) {
            rollout.setRecordId(id);
        }
        return rollout;
    }

    private static Rollout decodeOwn(Sent sent) {
        // What the sender meant to land, the Rollout fields: they come first in the bytes of every schema here
        // (the evolved record's added field follows them and is checked as a column).
        Rollout rollout = new Rollout();
        try {
            var decoder = org.apache.avro.io.DecoderFactory.get()
                    .binaryDecoder(sent.value(), 5, sent.value().length - 5, null);
            return new org.apache.avro.specific.SpecificDatumReader<Rollout>(Rollout.getClassSchema())
                    .read(rollout, decoder);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    /** Rollout with these fields after its own: a producer's newer schema. */
    private static Schema evolvedRolloutSchema(Schema.Field... added) {
        Schema base = Rollout.getClassSchema();
        List<Schema.Field> fields = new ArrayList<>();
        for (Schema.Field f : base.getFields()) {
            fields.add(new Schema.Field(f, f.schema()));
        }
        fields.addAll(List.of(added));
        return Schema.createRecord(base.getName(), base.getDoc(), base.getNamespace(), false, fields);
    }

    /** Encodes the values of fields that follow the contract's in a newer schema. */
    @FunctionalInterface
    private interface AddedValues {
        void write(BinaryEncoder out) throws Exception;
    }

    /** The rollout's bytes, then the added fields' values: how a record of the newer schema is encoded. */
    private static byte[] withAddedValues(Rollout rollout, AddedValues added) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new SpecificDatumWriter<Rollout>(Rollout.getClassSchema()).write(rollout, encoder);
        added.write(encoder);
        encoder.flush();
        return out.toByteArray();
    }

    private static byte[] avro(Schema schema, GenericRecord record) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(schema).write(record, encoder);
        encoder.flush();
        return out.toByteArray();
    }

    private static String lastHeader(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
