package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
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
import dev.rolloutingest.table.rows.AddedValues;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Input as a hostile producer and a broken store would give it, on a real broker, registry and table: every
 * kind of bad or tricky record either lands exactly or is dead-lettered exactly once with its reason, the
 * partition keeps sealing, a record the table refuses at write time survives a crash in the middle of being
 * dead-lettered, and a partition that cannot seal shows on /health.
 */
class BadInputIT {
    private static final Path ROOT = Path.of("target", "it-bad-input").toAbsolutePath();

    @RegisterExtension
    static final IngestCluster cluster = new IngestCluster("it-bad-input");

    /** One record the test sends: its bytes, and what must become of it. */
    private record Sent(
            String kind, byte[] key, byte[] value, RecordHeaders headers, Set<String> dlqReasons, String landsAs) {
        static Sent bad(String kind, byte[] key, byte[] value, String... reasons) {
            return new Sent(kind, key, value, new RecordHeaders(), Set.of(reasons), null);
        }

        static Sent good(String kind, Rollout rollout, byte[] value) {
            return new Sent(
                    kind, bytes(rollout.getRecordId()), value, new RecordHeaders(), Set.of(), rollout.getRecordId());
        }
    }

    @Test
    void everyBadOrTrickyRecordLandsExactlyOrIsDeadLetteredOnceWithItsReasonAndThePartitionKeepsSealing()
            throws Exception {
        String run = "bad-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
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

        List<Sent> tricky = new ArrayList<>();
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
        Sent spoofedBad = Sent.bad(
                "bad record with a spoofed DLQ header", bytes("s"), bytes("not avro at all"), "bad-magic-byte");
        spoofedBad.headers().add("rollout.dlq.reason", bytes("all-fine"));
        tricky.add(spoofedBad);

        for (String id : List.of(
                "sql-'; DROP TABLE rollouts; --",
                "url-a/b?c=d&e#f%20g+h",
                "emoji-\uD83D\uDE00\uD83D\uDE80",
                "nul-\u0000-byte",
                "cjk-\u4E2D\u6587",
                "rtl-\u200F\u05E9\u05DC\u05D5\u05DD",
                "long-" + "y".repeat(10_240))) {
            Rollout rollout = tricked(generator, id);
            rollout.setExperiment("exp/" + id.substring(0, Math.min(40, id.length())));
            tricky.add(Sent.good(
                    "record_id " + id.substring(0, Math.min(12, id.length())),
                    rollout,
                    serializer.serialize(input, rollout)));
        }
        Rollout nan = tricked(generator, "nan-reward");
        nan.setReward(Float.NaN);
        tricky.add(Sent.good("NaN reward", nan, serializer.serialize(input, nan)));
        Rollout inf = tricked(generator, "inf-reward");
        inf.setReward(Float.POSITIVE_INFINITY);
        inf.setAdvantage(Float.NEGATIVE_INFINITY);
        tricky.add(Sent.good("infinite reward and advantage", inf, serializer.serialize(input, inf)));
        Instant earliest = Instant.ofEpochSecond(
                Math.floorDiv(Long.MIN_VALUE, 1_000_000L), Math.floorMod(Long.MIN_VALUE, 1_000_000L) * 1_000L);
        Instant latest = Instant.ofEpochSecond(
                Math.floorDiv(Long.MAX_VALUE, 1_000_000L), Math.floorMod(Long.MAX_VALUE, 1_000_000L) * 1_000L);
        Rollout early = tricked(generator, "created-at-min");
        early.setCreatedAt(earliest);
        tricky.add(Sent.good("created_at = Long.MIN_VALUE micros", early, serializer.serialize(input, early)));
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
                }))));
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

        // 1,000 valid rollouts with the tricky ones interleaved.
        List<Sent> sends = new ArrayList<>();
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

        double[] counted = new double[2];
        try (IngestApp app = new IngestApp(IngestConfig.of(props)).start();
                KafkaProducer<byte[], byte[]> producer = rawProducer()) {
            for (Sent sent : sends) {
                producer.send(new ProducerRecord<>(input, null, sent.key(), sent.value(), sent.headers()))
                        .get();
            }
            cluster.awaitAllSealed(run, input, 1, tableDir, run + "-generations", 120);
            counted[0] = app.registry()
                    .find("rollout.ingest.dropped.fields.records")
                    .counter()
                    .count();
            counted[1] = app.registry().find("rollout.ingest.schema.refused.records").counters().stream()
                    .mapToDouble(c -> c.count())
                    .sum();
        }

        Map<Long, Sent> byOffset = new TreeMap<>();
        for (int i = 0; i < sends.size(); i++) {
            byOffset.put((long) i, sends.get(i));
        }
        Map<Long, ConsumerRecord<byte[], byte[]>> dead = new TreeMap<>();
        for (ConsumerRecord<byte[], byte[]> record : readAll(run + "-dlq")) {
            long offset = Long.parseLong(header(record, "rollout.dlq.source.offset"));
            assertThat(dead.put(offset, record))
                    .as("dead-lettered once: offset %d", offset)
                    .isNull();
        }
        Map<String, String> wrong = new LinkedHashMap<>();
        byOffset.forEach((offset, sent) -> {
            ConsumerRecord<byte[], byte[]> letter = dead.get(offset);
            if (sent.dlqReasons().isEmpty() && letter != null) {
                wrong.put(sent.kind(), "dead-lettered as " + header(letter, "rollout.dlq.reason"));
            } else if (!sent.dlqReasons().isEmpty()) {
                if (letter == null) {
                    wrong.put(sent.kind(), "not in the DLQ");
                } else if (!sent.dlqReasons().contains(header(letter, "rollout.dlq.reason"))) {
                    wrong.put(
                            sent.kind(),
                            "reason " + header(letter, "rollout.dlq.reason") + ", expected " + sent.dlqReasons());
                } else if (!java.util.Arrays.equals(letter.value(), sent.value())) {
                    wrong.put(sent.kind(), "DLQ value is not the producer's bytes");
                }
            }
        });
        assertThat(wrong).as("records whose fate is wrong").isEmpty();
        assertThat(counted[0])
                .as("nothing dropped: the evolved schema's extra field is a column")
                .isZero();
        assertThat(counted[1]).as("refused records counted by schema id").isGreaterThanOrEqualTo(2);
        ConsumerRecord<byte[], byte[]> spoofed = dead.get(offsetOf(byOffset, spoofedBad));
        assertThat(header(spoofed, "producer.rollout.dlq.reason")).isEqualTo("all-fine");
        assertThat(lastHeader(spoofed, "rollout.dlq.reason")).isEqualTo("bad-magic-byte");

        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            Map<String, Rollout> expected = new LinkedHashMap<>();
            for (Sent sent : sends) {
                if (sent.landsAs() != null) {
                    expected.put(sent.landsAs(), decodeOwn(sent));
                }
            }
            assertThat(table.countRows()).isEqualTo(expected.size());
            expected.forEach((id, rollout) -> {
                RolloutRow row = table.get(id)
                        .orElseThrow(() ->
                                new AssertionError("not readable: " + id.substring(0, Math.min(40, id.length()))));
                assertThat(row.rollout().getPolicyVersion()).isEqualTo(rollout.getPolicyVersion());
                assertThat(row.rollout().getCreatedAt()).isEqualTo(rollout.getCreatedAt());
                assertThat(row.rollout().getExperiment()).isEqualTo(rollout.getExperiment());
            });
            assertThat(table.get("battery-nan-reward").orElseThrow().rollout().getReward())
                    .isNaN();
            assertThat(table.get("battery-inf-reward").orElseThrow().rollout().getAdvantage())
                    .isEqualTo(Float.NEGATIVE_INFINITY);
            assertThat(table.get("battery-same-id-three-times")
                            .orElseThrow()
                            .rollout()
                            .getPolicyVersion())
                    .isEqualTo(3L);
            assertThat(table.get("battery-created-at-min")
                            .orElseThrow()
                            .rollout()
                            .getCreatedAt())
                    .isEqualTo(earliest);
            assertThat(table.list(dev.rolloutingest.table.reads.ListQuery.all(10)
                            .withExperiment("exp/emoji-\uD83D\uDE00\uD83D\uDE80")))
                    .hasSize(1);
            assertThat(table.get(evolvedRollout.getRecordId()).orElseThrow().added())
                    .as("the evolved schema's extra field is a column of the table, with its value")
                    .containsEntry("logprob_mask", "mask-v2");
            // The partition kept sealing: its generations reach the last offset.
            var pending = table.generations().pending(ShardId.of(input, 0));
            assertThat(pending.get(pending.size() - 1).lastOffset()).isEqualTo(sends.size() - 1);
        }
    }

    @Test
    void aRecordTheTableRefusesIsDeadLetteredExactlyOnceEvenWhenTheAppDiesRightAfterSealingTheRest() throws Exception {
        String run = "refused-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        String dlq = run + "-dlq";
        cluster.kafka()
                .createTopics(List.of(
                        new NewTopic(input, 1, (short) 1),
                        new NewTopic(run + "-generations", 1, (short) 1),
                        new NewTopic(dlq, 1, (short) 1)));
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Path config = cluster.writeConfig(
                work,
                Map.of(
                        "rollout.input.topic",
                        input,
                        "rollout.generations.topic",
                        run + "-generations",
                        "rollout.dlq.topic",
                        dlq,
                        "rollout.table.uri",
                        tableDir.toString(),
                        "application.id",
                        run,
                        "rollout.state.dir",
                        work.resolve("state").toString()));
        Map<String, String> poisonRefused = Map.of("ROLLOUT_FAULT_UNWRITABLE_RECORD_ID_PREFIX", "poison-");
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", cluster.registry().confluentUrl()), false);
        RolloutGenerator generator = new RolloutGenerator("ok", 32, 3);
        List<String> poisonIds = List.of("poison-1", "poison-2");
        try (KafkaProducer<byte[], byte[]> producer = rawProducer()) {
            for (int i = 0; i < 50; i++) {
                Rollout rollout = generator.rollout(i, 0);
                if (i < poisonIds.size()) {
                    rollout.setRecordId(
                            poisonIds.get(i)); // offsets 0 and 1: in the first generation, whatever its size
                }
                producer.send(new ProducerRecord<>(
                                input, bytes(rollout.getRecordId()), serializer.serialize(input, rollout)))
                        .get();
            }
        }
        Path log = work.resolve("ingest.log");
        // The first write (the batch without the refused rows) is durable, then the JVM halts before its
        // dead letters, event and offsets commit.
        Map<String, String> haltAfterFirstWrite = new java.util.HashMap<>(poisonRefused);
        haltAfterFirstWrite.put("ROLLOUT_FAULT_HALT_AFTER_WRITES", "1");
        ChildJvm app = ChildJvm.start(FaultyIngestApp.class, List.of(config.toString()), haltAfterFirstWrite, log);
        assertThat(app.waitFor(120)).as("the fault-injected run halts itself").isEqualTo(137);
        app = ChildJvm.start(FaultyIngestApp.class, List.of(config.toString()), poisonRefused, log);
        List<ConsumerRecord<byte[], byte[]>> dead;
        try {
            long deadline = System.currentTimeMillis() + 120_000;
            while (!Files.readString(log).contains("adopting generation") && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
            }
            assertThat(Files.readString(log)).contains("adopting generation");
            cluster.awaitAllSealed(run, input, 1, tableDir, run + "-generations", 120);
            dead = readAll(dlq);
        } finally {
            app.stop();
        }
        assertThat(dead)
                .extracting(r -> new String(r.key(), StandardCharsets.UTF_8))
                .containsExactlyInAnyOrderElementsOf(poisonIds);
        assertThat(dead)
                .allSatisfy(r -> assertThat(header(r, "rollout.dlq.reason")).isEqualTo("unwritable"));
        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(tableDir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            assertThat(table.countRows()).isEqualTo(48);
            assertThat(table.get("poison-1")).isEmpty();
            assertThat(table.get(RolloutGenerator.recordId("ok", 49))).isPresent();
        }
    }

    @Test
    void aPartitionThatCannotSealTurnsHealthUnhealthyNamingItUntilItSealsAgain() throws Exception {
        String run = "stuck-" + UUID.randomUUID().toString().substring(0, 8);
        String input = run + "-rollouts";
        cluster.createRunTopics(run, input, 2);
        Path work = ROOT.resolve(run);
        Path tableDir = work.resolve("table");
        Map<String, Object> props = cluster.appProps(run, input, work);
        props.putAll(Map.of(
                "rollout.seal.max.age.ms",
                "300",
                "rollout.seal.check.interval.ms",
                "100",
                "rollout.seal.write.attempts",
                "2",
                "rollout.health.stuck.after.ms",
                "2000",
                "rollout.health.max.thread.replacements",
                "1",
                // Two replacements within it make /health say so; a replacement takes a rebalance past the 6 s
                // session timeout, longer on a loaded machine: the window is generous.
                "rollout.health.thread.replacement.window.ms",
                "60000",
                "streams.commit.interval.ms",
                "200",
                "streams.session.timeout.ms",
                "6000",
                "streams.heartbeat.interval.ms",
                "1000"));
        try (IngestApp app = new IngestApp(IngestConfig.of(props)).start()) {
            app.runtime().awaitRunning(Duration.ofSeconds(60));
            assertThat(health(app).statusCode()).isEqualTo(200);
            // The store refuses every generation write: _mem_wal is a file, not a folder.
            Path memWal = tableDir.resolve("_mem_wal");
            Files.writeString(memWal, "in the way");
            cluster.produce(input, 0, 40, 40, new TreeMap<>(), new AtomicLong(), 0);
            HttpResponse<String> stuck = awaitHealth(app, 503, 60);
            long deadline = System.currentTimeMillis() + 120_000;
            while (!(stuck.body().contains("has held unsealed records for")
                            && stuck.body().contains("were replaced"))
                    && System.currentTimeMillis() < deadline) {
                Thread.sleep(200);
                stuck = health(app);
            }
            assertThat(stuck.statusCode()).isEqualTo(503);
            assertThat(stuck.body()).containsPattern("partition [01] has held unsealed records for");
            assertThat(stuck.body()).contains("last seal error");
            assertThat(stuck.body()).contains("stream threads failed and were replaced");
            assertThat(app.registry()
                            .find("rollout.streams.thread.replacements")
                            .counter()
                            .count())
                    .isGreaterThan(1);
            assertThat(app.registry()
                            .find("rollout.ingest.seal.failures")
                            .tag("cause", "storage")
                            .counter()
                            .count())
                    .isPositive();
            assertThat(app.registry()
                            .find("rollout.ingest.seal.failures")
                            .tag("cause", "data")
                            .counter()
                            .count())
                    .as("a store that refuses writes is not the data's fault")
                    .isZero();
            Files.delete(memWal);
            // Healthy again once the replacements are out of the 60 s window.
            assertThat(awaitHealth(app, 200, 180).body()).contains("\"problems\":[]");
            cluster.awaitAllSealed(run, input, 2, tableDir, run + "-generations", 120);
        }
    }

    private static HttpResponse<String> health(IngestApp app) throws Exception {
        return IngestCluster.health(app);
    }

    private static HttpResponse<String> awaitHealth(IngestApp app, int status, int seconds) throws Exception {
        long deadline = System.currentTimeMillis() + seconds * 1000L;
        HttpResponse<String> last = health(app);
        while (last.statusCode() != status && System.currentTimeMillis() < deadline) {
            Thread.sleep(250);
            last = health(app);
        }
        assertThat(last.statusCode()).as("/health: %s", last.body()).isEqualTo(status);
        return last;
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

    private static long offsetOf(Map<Long, Sent> byOffset, Sent sent) {
        return byOffset.entrySet().stream()
                .filter(e -> e.getValue() == sent)
                .findFirst()
                .orElseThrow()
                .getKey();
    }

    private static KafkaProducer<byte[], byte[]> rawProducer() {
        return new KafkaProducer<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        cluster.kafka().bootstrapServers(),
                        ProducerConfig.ACKS_CONFIG,
                        "all",
                        ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
                        1_000_000),
                new ByteArraySerializer(),
                new ByteArraySerializer());
    }

    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic) {
        return IngestCluster.readToEnd(
                cluster.kafka().bootstrapServers(), topic, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** The first header of that name: the one a DLQ reader that trusts ours would find. */
    private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().headers(name).iterator().hasNext()
                ? record.headers().headers(name).iterator().next()
                : null;
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static String lastHeader(ConsumerRecord<byte[], byte[]> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
