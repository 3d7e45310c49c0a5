package dev.rolloutingest.table.rows;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.localTable;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.AvroContracts;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.SerdeException;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSeams;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.merge.MergeRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.ResolvingDecoder;
import org.apache.avro.specific.SpecificDatumWriter;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.ipc.ScanOptions;

/**
 * Fields a producer adds (a newer Rollout schema) become columns of the base and of the generations that hold
 * them, read back with their values (null for rows written before), survive merges through both paths, and a
 * field the table cannot take is refused with its record only.
 */
class AddedColumnsTest {
    static {
        AvroContracts.trust();
    }

    private static final Schema CONTRACT = Rollout.getClassSchema();
    private static final Schema DETAIL = SchemaBuilder.record("ToolDetail")
            .fields()
            .requiredString("tool")
            .optionalLong("millis")
            .endRecord();
    /** The contract plus a primitive, an array, a map, a nullable record and a nullable string. */
    private static final Schema NEWER = newer(List.of(
            new Schema.Field("tool_calls", Schema.create(Schema.Type.INT), null, 0),
            new Schema.Field("tags", Schema.createArray(Schema.create(Schema.Type.STRING)), null, List.of()),
            new Schema.Field("scores", Schema.createMap(Schema.create(Schema.Type.DOUBLE)), null, Map.of()),
            new Schema.Field("detail", nullable(DETAIL), null, Schema.Field.NULL_DEFAULT_VALUE),
            new Schema.Field(
                    "note", nullable(Schema.create(Schema.Type.STRING)), null, Schema.Field.NULL_DEFAULT_VALUE)));

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

    private static Schema nullable(Schema type) {
        return Schema.createUnion(Schema.create(Schema.Type.NULL), type);
    }

    /** The contract with these fields after its own: what a producer registers as the next version. */
    static Schema newer(List<Schema.Field> added) {
        List<Schema.Field> fields = new ArrayList<>();
        CONTRACT.getFields().forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        fields.addAll(added);
        return Schema.createRecord(CONTRACT.getName(), null, CONTRACT.getNamespace(), false, fields);
    }

    /** What the deserializer reads a newer record with: the contract, then the writer's added fields. */
    private static Schema readerFor(Schema writer) {
        List<Schema.Field> fields = new ArrayList<>();
        CONTRACT.getFields().forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        writer.getFields().stream()
                .filter(f -> CONTRACT.getField(f.name()) == null)
                .forEach(f -> fields.add(new Schema.Field(f, f.schema())));
        return Schema.createRecord(CONTRACT.getName(), null, CONTRACT.getNamespace(), false, fields);
    }

    /** A record of {@code writer}: the generated rollout's fields, then the added values given. */
    static GenericRecord record(Schema writer, Rollout rollout, Map<String, Object> added) throws IOException {
        // the rollout as plain Avro values (created_at a long, as a producer's generic record has it)
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(bytes, null);
        new SpecificDatumWriter<>(Rollout.class).write(rollout, encoder);
        encoder.flush();
        GenericRecord contract = new GenericDatumReader<GenericRecord>(CONTRACT)
                .read(null, DecoderFactory.get().binaryDecoder(bytes.toByteArray(), null));
        GenericData.Record record = new GenericData.Record(writer);
        for (Schema.Field f : writer.getFields()) {
            record.put(f.name(), CONTRACT.getField(f.name()) != null ? contract.get(f.name()) : added.get(f.name()));
        }
        return record;
    }

    /** Decodes the record as ingest does (resolving to the contract plus added fields) and commits the row. */
    static void stage(GenerationBatch batch, GenericRecord record, long offset) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<GenericRecord>(record.getSchema()).write(record, encoder);
        encoder.flush();
        ResolvingDecoder in = DecoderFactory.get()
                .resolvingDecoder(
                        record.getSchema(),
                        readerFor(record.getSchema()),
                        DecoderFactory.get().binaryDecoder(out.toByteArray(), null));
        batch.stage(in, in.readFieldOrder(), 0, offset, Instant.now());
        in.drain();
        batch.commitStaged();
    }

    private static Map<String, Object> values(int i) {
        Map<String, Object> values = new LinkedHashMap<>();
        values.put("tool_calls", i);
        values.put("tags", List.of("t" + i, "x"));
        values.put("scores", Map.of("accuracy", 0.5 + i));
        GenericData.Record detail = new GenericData.Record(DETAIL);
        detail.put("tool", "search");
        detail.put("millis", i % 2 == 0 ? null : (long) i * 10);
        values.put("detail", i == 3 || i == 12 ? null : detail);
        values.put("note", i == 4 ? null : "n" + i);
        return values;
    }

    @Test
    void aNewerProducersFieldsBecomeColumnsReadBackWithValuesAndNullForRowsWrittenBefore() throws Exception {
        RolloutGenerator generator = new RolloutGenerator("evolve", 16, 3);
        try (RolloutTable table = localTable("added", meters)) {
            String shard = ShardId.of(TOPIC, 0);
            // generation 1: the old schema; merged into the base before the new fields exist
            table.generations().write(TOPIC, 0, 0, 4, rows(generator, 0, 5), 500);
            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            // generation 2: old rows only, still pending when the fields arrive
            table.generations().write(TOPIC, 0, 5, 9, rows(generator, 5, 10), 500);
            // generation 3: the newer schema
            try (GenerationBatch batch = table.generations().newBatch()) {
                for (int i = 10; i < 16; i++) {
                    stage(batch, record(NEWER, generator.rollout(i, 0), values(i)), i);
                }
                assertThat(batch.addedFields())
                        .extracting(f -> f.getName())
                        .containsExactly("tool_calls", "tags", "scores", "detail", "note");
                table.generations().write(TOPIC, 0, 10, 15, batch, 600, List.of());
            }
            assertThat(table.generations().addedColumns().keySet())
                    .as("the base has the columns before any generation holding them is readable")
                    .containsExactly("tool_calls", "tags", "scores", "detail", "note");

            assertAddedValues(table, generator, "pending");
            assertThat(table.get(generator.rollout(7, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .as("a pending generation written before reads null in every added column")
                    .containsOnlyKeys("tool_calls", "tags", "scores", "detail", "note")
                    .allSatisfy((name, value) -> assertThat(value).isNull());

            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            assertThat(table.generations().pending(shard)).isEmpty();
            assertAddedValues(table, generator, "merged");
            assertThat(table.get(generator.rollout(2, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .as("a base row from before the columns")
                    .containsEntry("tool_calls", null)
                    .containsEntry("note", null);
            assertThat(table.countRows()).isEqualTo(16);

            // an independent lance-core reader sees the columns and the values
            try (RootAllocator allocator = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(allocator)
                            .uri(table.location().uri())
                            .build()) {
                assertThat(base.getSchema().getFields())
                        .extracting(f -> f.getName())
                        .contains("tool_calls", "tags", "scores", "detail", "note");
                Map<String, Object> toolCalls = new HashMap<>();
                try (var scanner = base.newScan(new ScanOptions.Builder()
                                .columns(List.of("record_id", "tool_calls"))
                                .build());
                        ArrowReader reader = scanner.scanBatches()) {
                    while (reader.loadNextBatch()) {
                        VectorSchemaRoot root = reader.getVectorSchemaRoot();
                        for (int i = 0; i < root.getRowCount(); i++) {
                            toolCalls.put(
                                    root.getVector("record_id").getObject(i).toString(),
                                    root.getVector("tool_calls").getObject(i));
                        }
                    }
                }
                assertThat(toolCalls).hasSize(16);
                assertThat(toolCalls.get(generator.rollout(12, 0).getRecordId()))
                        .isEqualTo(12);
                assertThat(toolCalls.get(generator.rollout(3, 0).getRecordId())).isNull();
            }
        }
        // and the project opens the evolved table again
        // (RolloutSchema.differences no longer calls an added column unexpected)
    }

    private static void assertAddedValues(RolloutTable table, RolloutGenerator generator, String where) {
        for (int i = 10; i < 16; i++) {
            Map<String, Object> added = table.get(generator.rollout(i, 0).getRecordId())
                    .orElseThrow()
                    .added();
            assertThat(added).as("%s row %d", where, i).containsEntry("tool_calls", i);
            assertThat(added.get("tags")).as(where).isEqualTo(List.of("t" + i, "x"));
            assertThat(added.get("scores")).as(where).isEqualTo(Map.of("accuracy", 0.5 + i));
            if (i == 3 || i == 12) {
                assertThat(added.get("detail"))
                        .as("%s row %d: a null record", where, i)
                        .isNull();
            } else {
                Map<String, Object> detail = new LinkedHashMap<>();
                detail.put("tool", "search");
                detail.put("millis", i % 2 == 0 ? null : (long) i * 10);
                assertThat(added.get("detail")).as(where).isEqualTo(detail);
            }
            assertThat(added.get("note")).as(where).isEqualTo(i == 4 ? null : "n" + i);
        }
    }

    private static List<RolloutRow> rows(RolloutGenerator generator, int from, int to) {
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = from; i < to; i++) {
            rows.add(new RolloutRow(generator.rollout(i, 0), 0, i, Instant.now()));
        }
        return rows;
    }

    @Test
    void aFieldTheTableCannotTakeIsRefusedWithItsRecordAloneAndAPromotableOneIsWrittenAsTheColumnsType()
            throws Exception {
        RolloutGenerator generator = new RolloutGenerator("refuse", 16, 4);
        Schema asLong = newer(List.of(new Schema.Field("steps", Schema.create(Schema.Type.LONG), null, 0L)));
        Schema asInt = newer(List.of(new Schema.Field("steps", Schema.create(Schema.Type.INT), null, 0)));
        Schema asString = newer(List.of(new Schema.Field("steps", Schema.create(Schema.Type.STRING), null, "")));
        Schema reserved = newer(List.of(new Schema.Field("source_offset", Schema.create(Schema.Type.LONG), null, 0L)));
        Schema union = newer(List.of(new Schema.Field(
                "mixed",
                Schema.createUnion(Schema.create(Schema.Type.INT), Schema.create(Schema.Type.STRING)),
                null,
                0)));
        try (RolloutTable table = localTable("refused", meters)) {
            try (GenerationBatch batch = table.generations().newBatch()) {
                stage(batch, record(asLong, generator.rollout(0, 0), Map.of("steps", 7L)), 0);
                table.generations().write(TOPIC, 0, 0, 0, batch, 100, List.of());
            }
            try (GenerationBatch batch = table.generations().newBatch()) {
                stage(batch, record(asInt, generator.rollout(1, 0), Map.of("steps", 8)), 1);
                assertThatThrownBy(
                                () -> stage(batch, record(asString, generator.rollout(2, 0), Map.of("steps", "x")), 2))
                        .isInstanceOf(SerdeException.class)
                        .hasMessageContaining("steps")
                        .satisfies(
                                e -> assertThat(((SerdeException) e).reason()).isEqualTo(AddedColumns.REFUSED_REASON));
                assertThatThrownBy(() ->
                                stage(batch, record(reserved, generator.rollout(3, 0), Map.of("source_offset", 1L)), 3))
                        .isInstanceOf(SerdeException.class)
                        .hasMessageContaining("reserved");
                assertThatThrownBy(() -> stage(batch, record(union, generator.rollout(4, 0), Map.of("mixed", 1)), 4))
                        .isInstanceOf(SerdeException.class)
                        .hasMessageContaining("union");
                stage(batch, record(CONTRACT_ONLY, generator.rollout(5, 0), Map.of()), 5);
                assertThat(batch.size())
                        .as("the refused rows left nothing behind")
                        .isEqualTo(2);
                table.generations().write(TOPIC, 0, 1, 5, batch, 100, List.of());
            }
            assertThat(table.get(generator.rollout(1, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .as("an int written into the long column")
                    .containsEntry("steps", 8L);
            assertThat(table.get(generator.rollout(5, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .containsEntry("steps", null);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            assertThat(table.get(generator.rollout(0, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .containsEntry("steps", 7L);
        }
    }

    private static final Schema CONTRACT_ONLY = newer(List.of());

    @Test
    void aCrashAfterTheBaseGainedItsColumnsLeavesATableThatOpensAndReadsAndTheRedoneSealWritesThem() throws Exception {
        RolloutGenerator generator = new RolloutGenerator("crash", 16, 6);
        TableLocation location;
        try (RolloutTable table = localTable("added-crash", meters)) {
            location = table.location();
            table.generations().write(TOPIC, 0, 0, 1, rows(generator, 0, 2), 200);
            // the seal gets as far as adding the columns to the base; the generation write then "crashes"
            TableSeams.failDatasetWrites(table, root -> "crashed before the generation was written");
            try (GenerationBatch batch = table.generations().newBatch()) {
                for (int i = 2; i < 5; i++) {
                    stage(batch, record(NEWER, generator.rollout(i, 0), values(i)), i);
                }
                assertThatThrownBy(() -> table.generations().write(TOPIC, 0, 2, 4, batch, 300, List.of()))
                        .hasMessageContaining("crashed");
            }
        }
        // a new process: the table opens, reads the rows it had (the new columns null), and the seal redone from
        // the same offsets writes the generation; the merge folds it
        try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, meters)) {
            assertThat(table.generations().addedColumns().keySet()).contains("tool_calls", "detail");
            assertThat(table.get(generator.rollout(1, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .containsEntry("tool_calls", null);
            assertThat(table.get(generator.rollout(3, 0).getRecordId())).isEmpty();
            try (GenerationBatch batch = table.generations().newBatch()) {
                for (int i = 2; i < 5; i++) {
                    stage(batch, record(NEWER, generator.rollout(i, 0), values(i)), i);
                }
                table.generations().write(TOPIC, 0, 2, 4, batch, 300, List.of());
            }
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            assertThat(table.get(generator.rollout(3, 0).getRecordId())
                            .orElseThrow()
                            .added())
                    .containsEntry("tool_calls", 3)
                    .containsEntry("detail", null);
            assertThat(table.countBaseRows()).isEqualTo(5);
        }
    }

    @Test
    void newKeysWithAddedColumnsAreAppendedAndAnUpdateThroughTheJoinKeepsItsNewValues() throws Exception {
        RolloutGenerator generator = new RolloutGenerator("adopt", 16, 5);
        TableSettings adoptAll = TableSettings.DEFAULTS.with(TableSettings.MERGE_ADOPT_MIN_ROWS, 0);
        try (RolloutTable table = TableFixtures.localTable("added-adopt", meters, adoptAll)) {
            String shard = ShardId.of(TOPIC, 0);
            try (GenerationBatch batch = table.generations().newBatch()) {
                for (int i = 0; i < 6; i++) {
                    stage(batch, record(NEWER, generator.rollout(i, 0), values(i)), i);
                }
                table.generations().write(TOPIC, 0, 0, 5, batch, 600, List.of());
            }
            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            assertThat(meters.counter("rollout.merge.rows", "path", "adopt").count()
                            + meters.counter("rollout.merge.rows", "path", "append")
                                    .count())
                    .as("new keys with added columns are appended (adopted only where lance's field ids match)")
                    .isEqualTo(6);
            // the same keys again with other values: the join path, newest wins
            try (GenerationBatch batch = table.generations().newBatch()) {
                for (int i = 0; i < 3; i++) {
                    Map<String, Object> changed = values(i);
                    changed.put("tool_calls", 100 + i);
                    changed.put("note", "updated");
                    stage(batch, record(NEWER, generator.rollout(i, 0), changed), 6 + i);
                }
                table.generations().write(TOPIC, 0, 6, 8, batch, 300, List.of());
            }
            table.merges().pass(MergeRequest.of(shard).limits(0, 0));
            assertThat(meters.counter("rollout.merge.rows", "path", "join").count())
                    .isEqualTo(3);
            for (int i = 0; i < 6; i++) {
                Map<String, Object> added = table.get(generator.rollout(i, 0).getRecordId())
                        .orElseThrow()
                        .added();
                assertThat(added.get("tool_calls")).isEqualTo(i < 3 ? 100 + i : i);
                assertThat(added.get("note")).isEqualTo(i < 3 ? "updated" : i == 4 ? null : "n" + i);
                assertThat(added.get("tags")).isEqualTo(List.of("t" + i, "x"));
            }
            assertThat(table.countRows()).isEqualTo(6);
        }
    }
}
