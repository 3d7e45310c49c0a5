package dev.rolloutingest.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutRow;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The repository's Python client (python/rollout_ingest) as trainers run it: four rank processes read a table over
 * Arrow Flight with pyarrow and get every rollout once between them; then each resumes, from its state file or from
 * a checkpoint taken part way through an answer, and gets the rows written since, once. pyarrow comes from this
 * machine's local wheels into a venv of the build; where it cannot be installed the test is skipped, saying so.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PythonTrainerIT {
    private static final String TOPIC = "rollouts";
    private static final String TOKEN = "trainer-token-0123456789abcdef";
    private static final int PARTITIONS = 4;
    private static final int RANKS = 4;
    private static final ObjectMapper JSON = new ObjectMapper();

    private Path python;
    private Path work;
    private RolloutTable table;
    private FlightReads flight;
    private final Map<Integer, Long> nextOffset = new HashMap<>();
    /** The partition each handed-out row came from, as the reader saw it. */
    private final Map<String, Integer> partitions = new HashMap<>();
    /** Every record_id written. */
    private final Set<String> written = new HashSet<>();

    @BeforeAll
    void start() throws Exception {
        python = PythonVenv.withPyarrow();
        work = Path.of("target", "python-trainer", UUID.randomUUID().toString()).toAbsolutePath();
        Files.createDirectories(work);
        table = RolloutTable.createOrOpen(
                TableLocation.local(work.resolve("table")), TableSettings.DEFAULTS, new SimpleMeterRegistry());
        for (int p = 0; p < PARTITIONS; p++) {
            write(p, 300);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, p)).limits(100, Long.MAX_VALUE));
            write(p, 200); // pending
        }
        flight = FlightReadsTest.serve(table, TOKEN);
    }

    @AfterAll
    void stop() throws Exception {
        if (flight != null) {
            flight.close();
        }
        if (table != null) {
            table.close();
        }
    }

    private Set<String> write(int partition, int rows) {
        long first = nextOffset.getOrDefault(partition, 0L);
        RolloutGenerator generator = new RolloutGenerator("exp-" + partition, 256, partition);
        List<RolloutRow> batch = new ArrayList<>();
        Set<String> ids = new HashSet<>();
        for (long offset = first; offset < first + rows; offset++) {
            batch.add(new RolloutRow(generator.rollout(offset, (int) offset), partition, offset, Instant.now()));
            ids.add(RolloutGenerator.recordId("exp-" + partition, offset));
        }
        table.generations().write(TOPIC, partition, first, first + rows - 1, batch, rows * 256L);
        nextOffset.put(partition, first + rows);
        written.addAll(ids);
        return ids;
    }

    @Test
    void fourRanksGetEveryRolloutOnceAndEachResumesExactly() throws Exception {
        // a first pass: four rank processes at once
        List<Process> ranks = new ArrayList<>();
        for (int rank = 0; rank < RANKS; rank++) {
            ranks.add(reader(rank, "--state", state(rank)));
        }
        for (Process rank : ranks) {
            finish(rank);
        }
        Map<String, Integer> first = handed();
        assertThat(first).hasSize(PARTITIONS * 500);
        partitions.forEach((id, partition) -> assertThat(first.get(id)).isEqualTo(partition % RANKS));

        // new rollouts on every partition; each rank resumes: rank 2 from a checkpoint taken part way through
        Set<String> added = new HashSet<>();
        for (int p = 0; p < PARTITIONS; p++) {
            added.addAll(write(p, 120));
        }
        Files.deleteIfExists(out());
        finish(reader(
                2,
                "--state",
                state(2),
                "--stop-after",
                "70",
                "--checkpoint",
                work.resolve("ck2.json").toString()));
        finish(reader(2, "--restore", work.resolve("ck2.json").toString()));
        for (int rank : new int[] {0, 1, 3}) {
            finish(reader(rank, "--state", state(rank)));
        }
        Map<String, Integer> second = handed();
        assertThat(second.keySet())
                .as("exactly the rollouts written since, once")
                .isEqualTo(added);
    }

    @Test
    void aRankReadsOverTlsTrustingTheServersCertificate() throws Exception {
        FlightReadsTest.TlsReads tls = FlightReadsTest.serveTls(table, TOKEN, work.resolve("tls"));
        try (FlightReads secure = tls.reads()) {
            Path handedOverTls = work.resolve("tls.jsonl");
            finish(reader(
                    secure.location(),
                    0,
                    1,
                    handedOverTls,
                    "--tls-root-certs",
                    tls.certificate().toString()));
            assertThat(handed(handedOverTls).keySet())
                    .as("every rollout, over grpc+tls")
                    .isEqualTo(written);
        }
    }

    private String state(int rank) {
        return work.resolve("rank-" + rank + ".ticket").toString();
    }

    private Path out() {
        return work.resolve("handed.jsonl");
    }

    private Process reader(int rank, String... extra) throws IOException {
        return reader(flight.location(), rank, RANKS, out(), extra);
    }

    private Process reader(String location, int rank, int ranks, Path handed, String... extra) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                python.toString(),
                PythonVenv.repo().resolve("python/tests/rank_reader.py").toString(),
                location,
                Integer.toString(rank),
                Integer.toString(ranks),
                handed.toString(),
                "--token",
                TOKEN));
        command.addAll(List.of(extra));
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        work.resolve("readers.log").toFile()))
                .start();
    }

    private void finish(Process process) throws Exception {
        assertThat(process.waitFor(120, TimeUnit.SECONDS)).as("the reader ends").isTrue();
        assertThat(process.exitValue())
                .as("the reader's exit (its output: %s)", Files.readString(work.resolve("readers.log")))
                .isZero();
    }

    /** Every row handed out so far: record_id to the rank that got it, each at most once. */
    private Map<String, Integer> handed() throws IOException {
        return handed(out());
    }

    /** The rows the readers wrote to {@code file}: record_id to the rank that got it, each at most once. */
    private Map<String, Integer> handed(Path file) throws IOException {
        Map<String, Integer> ranks = new HashMap<>();
        for (String line : Files.readAllLines(file)) {
            JsonNode row = JSON.readTree(line);
            partitions.put(row.get("record_id").asText(), row.get("partition").asInt());
            Integer before =
                    ranks.put(row.get("record_id").asText(), row.get("rank").asInt());
            assertThat(before).as("%s handed out once", row.get("record_id")).isNull();
        }
        return ranks;
    }

    /** A venv of the build with pyarrow from the machine's wheels; the test is skipped where there is none. */
    static final class PythonVenv {
        static Path repo() {
            Path here = Path.of("").toAbsolutePath();
            return Files.isDirectory(here.resolve("python")) ? here : here.getParent();
        }

        static Path withPyarrow() throws Exception {
            Path venv = repo().resolve("target/python-venv");
            Path python = venv.resolve("bin/python");
            if (!Files.isExecutable(python) || run(python.toString(), "-c", "import pyarrow.flight") != 0) {
                int made = run("python3", "-m", "venv", "--clear", venv.toString());
                Assumptions.assumeTrue(
                        made == 0, "python3 -m venv failed: no Python venv here, the client is not tested");
                int installed = run(python.toString(), "-m", "pip", "install", "-q", "pyarrow");
                Assumptions.assumeTrue(
                        installed == 0, "pip could not install pyarrow from this machine's index: client not tested");
            }
            return python;
        }

        private static int run(String... command) throws Exception {
            Process process = new ProcessBuilder(command).inheritIO().start();
            if (!process.waitFor(600, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return -1;
            }
            return process.exitValue();
        }
    }
}
