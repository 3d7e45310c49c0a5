package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** get, list and status against a local table, as a user types them. */
class ReadCommandsTest {
    private Path dir;

    @BeforeEach
    void table() {
        dir = Path.of("target", "cli", UUID.randomUUID().toString()).toAbsolutePath();
        try (RolloutTable table = RolloutTable.createOrOpen(
                TableLocation.local(dir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            RolloutGenerator generator = new RolloutGenerator("cli", 8, 1);
            List<RolloutRow> rows = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                var rollout = generator.rollout(i, 0);
                if (i >= 4) {
                    rollout.setExperiment("other");
                }
                rows.add(new RolloutRow(rollout, 0, i, Instant.now()));
            }
            table.generations().write("rollouts", 0, 0, 3, rows.subList(0, 4), 100);
            table.merges().pass(MergeRequest.of(ShardId.of("rollouts", 0)).limits(8, 0));
            table.generations().write("rollouts", 0, 4, 5, rows.subList(4, 6), 100);
        }
    }

    private record Run(int code, String out) {}

    private static Run run(String... args) {
        PrintStream original = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            int code = Launcher.run(args);
            return new Run(code, captured.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(original);
        }
    }

    @Test
    void getPrintsTheRolloutAndExits3WhenAbsent() {
        Run found = run("get", "--table", dir.toString(), "cli-5");
        assertThat(found.code()).isZero();
        assertThat(found.out()).contains("\"record_id\" : \"cli-5\"").contains("\"experiment\" : \"other\"");
        assertThat(run("get", "--table", dir.toString(), "cli-99").code()).isEqualTo(3);
    }

    @Test
    void listFiltersByExperimentOverBaseAndPendingGenerations() {
        Run other = run("list", "--table", dir.toString(), "--experiment", "other");
        assertThat(other.code()).isZero();
        assertThat(other.out().lines()).hasSize(2).allSatisfy(line -> assertThat(line)
                .contains("\"experiment\":\"other\""));
        assertThat(run("list", "--table", dir.toString(), "--limit", "3").out().lines())
                .hasSize(3);
    }

    @Test
    void statusShowsEachShardsPendingCountAndWatermark() {
        Run status = run("status", "--table", dir.toString());
        assertThat(status.code()).isZero();
        assertThat(status.out())
                .containsPattern(ShardId.of("rollouts", 0) + "\\s+1\\s+4")
                .contains("base rows: 4");
    }

    @Test
    void tablesListsTheTablesUnderARootAndEveryCommandNamesOneByRootAndName() {
        Path root = dir.resolveSibling(dir.getFileName() + "-root");
        try (var tables = dev.rolloutingest.table.catalog.TableCatalog.under(
                TableLocation.local(root), TableSettings.DEFAULTS, new SimpleMeterRegistry(), 10)) {
            RolloutGenerator generator = new RolloutGenerator("grpo", 8, 1);
            tables.createOrOpen("grpo")
                    .generations()
                    .write(
                            "rollouts",
                            0,
                            0,
                            2,
                            List.of(
                                    new RolloutRow(generator.rollout(0, 0), 0, 0, Instant.now()),
                                    new RolloutRow(generator.rollout(1, 0), 0, 1, Instant.now()),
                                    new RolloutRow(generator.rollout(2, 0), 0, 2, Instant.now())),
                            100);
            tables.createOrOpen("ppo");
        }
        Run listed = run("tables", "--root", root.toString());
        assertThat(listed.code()).isZero();
        assertThat(listed.out().lines().filter(line -> line.startsWith("grpo")))
                .singleElement()
                .satisfies(line -> assertThat(line.split("\\s+")).startsWith("grpo", "3", "0", "1", "1"));
        assertThat(listed.out().lines().filter(line -> line.startsWith("ppo")))
                .singleElement()
                .satisfies(line -> assertThat(line.split("\\s+")).startsWith("ppo", "0", "0"));
        Run found = run("get", "--root", root.toString(), "--table", "grpo", "grpo-2");
        assertThat(found.code()).isZero();
        assertThat(found.out()).contains("\"record_id\" : \"grpo-2\"");
        assertThat(run("get", "--root", root.toString(), "--table", "ppo", "grpo-2")
                        .code())
                .as("another table's key")
                .isEqualTo(3);
        assertThat(run("list", "--root", root.toString(), "--table", "grpo")
                        .out()
                        .lines())
                .hasSize(3);
    }

    @Test
    void aMissingTableIsAClearErrorNotAStackTrace() {
        Run missing = run("status", "--table", dir.resolve("nope").toString());
        assertThat(missing.code()).isEqualTo(1);
    }

    /** Rows of an Arrow IPC stream file, read with Arrow's own reader; per record_id, whether it is a delete. */
    private static java.util.Map<String, Boolean> arrowFile(Path file) throws Exception {
        java.util.Map<String, Boolean> rows = new java.util.HashMap<>();
        try (var allocator = new org.apache.arrow.memory.RootAllocator();
                var in = java.nio.file.Files.newInputStream(file);
                var reader = new org.apache.arrow.vector.ipc.ArrowStreamReader(in, allocator)) {
            var root = reader.getVectorSchemaRoot();
            while (reader.loadNextBatch()) {
                var deleted = (org.apache.arrow.vector.BitVector) root.getVector("_deleted");
                for (int i = 0; i < root.getRowCount(); i++) {
                    rows.put(
                            root.getVector("record_id").getObject(i).toString(),
                            deleted != null && deleted.get(i) == 1);
                }
            }
        }
        return rows;
    }

    @Test
    void scanWritesAnArrowStreamAndTailGoesOnFromItsCursor() throws Exception {
        Path out = dir.resolveSibling(dir.getFileName() + "-scan.arrow");
        Run scan = run(
                "scan",
                "--table",
                dir.toString(),
                "--columns",
                "record_id,experiment",
                "--experiment",
                "cli",
                "--out",
                out.toString());
        assertThat(scan.code()).isZero();
        assertThat(arrowFile(out)).hasSize(4);
        var summary = dev.rolloutingest.runtime.HttpEndpoint.JSON.readTree(scan.out());
        assertThat(summary.get("rows").asLong()).isEqualTo(4);
        String cursor = summary.get("cursor").asText();

        try (RolloutTable table =
                RolloutTable.open(TableLocation.local(dir), TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            var later = new RolloutGenerator("cli", 8, 1).rollout(9, 1);
            table.generations().write("rollouts", 0, 6, 6, List.of(new RolloutRow(later, 0, 6, Instant.now())), 100);
        }
        Path cursorFile = dir.resolveSibling(dir.getFileName() + ".cursor");
        java.nio.file.Files.writeString(cursorFile, cursor);
        Path next = dir.resolveSibling(dir.getFileName() + "-tail.arrow");
        Run tail = run(
                "tail", "--table", dir.toString(), "--cursor-file", cursorFile.toString(), "--out", next.toString());
        assertThat(tail.code()).isZero();
        assertThat(arrowFile(next)).containsOnlyKeys(RolloutGenerator.recordId("cli", 9));
        assertThat(java.nio.file.Files.readString(cursorFile).trim()).isNotEqualTo(cursor);
        // the cursor file moved on: nothing new
        assertThat(run(
                                "tail",
                                "--table",
                                dir.toString(),
                                "--cursor-file",
                                cursorFile.toString(),
                                "--out",
                                next.toString())
                        .code())
                .isZero();
        assertThat(arrowFile(next)).isEmpty();
        assertThat(run("scan", "--table", dir.toString(), "--columns", "nope", "--out", out.toString())
                        .code())
                .isEqualTo(2);
    }
}
