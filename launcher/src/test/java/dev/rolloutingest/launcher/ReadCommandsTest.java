package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
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
            table.writeGeneration("rollouts", 0, 0, 3, rows.subList(0, 4), 100);
            table.mergePass(ShardId.of("rollouts", 0), 8, 0);
            table.writeGeneration("rollouts", 0, 4, 5, rows.subList(4, 6), 100);
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
    void aMissingTableIsAClearErrorNotAStackTrace() {
        Run missing = run("status", "--table", dir.resolve("nope").toString());
        assertThat(missing.code()).isEqualTo(1);
    }
}
