package dev.rolloutingest.launcher;

import dev.rolloutingest.ingest.IngestConfig;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.reads.RowStream;
import dev.rolloutingest.table.reads.TailCursor;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * scan and tail: the HTTP reads for training ({@link TrainingReads}) straight from the table, written to an Arrow IPC
 * stream file; a line of JSON on stdout says how many rows and the cursor to tail from.
 */
final class TrainingReadCommands {
    private TrainingReadCommands() {}

    /** The columns and filters both commands take. */
    static final class QueryOptions {
        @Option(names = "--columns", description = "Columns of the answer, comma-separated (default: every column)")
        String columns;

        @Option(names = "--experiment", description = "Only this experiment")
        String experiment;

        @Option(names = "--policy-version-min", description = "Only policy_version >= this")
        Long policyVersionMin;

        @Option(names = "--policy-version-max", description = "Only policy_version <= this")
        Long policyVersionMax;

        @Option(names = "--reward-min", description = "Only reward >= this")
        Double rewardMin;

        @Option(names = "--reward-max", description = "Only reward <= this")
        Double rewardMax;

        @Option(names = "--include-in-training", description = "Only rows whose include_in_training is this")
        Boolean includeInTraining;

        @Option(names = "--created-from", description = "Only rows created at or after this ISO-8601 instant")
        String createdFrom;

        @Option(names = "--created-before", description = "Only rows created before this ISO-8601 instant")
        String createdBefore;

        @Option(names = "--batch-rows", description = "Rows per Arrow batch (default: the table's setting)")
        Integer batchRows;

        @Option(
                names = "--topic",
                descriptionKey = IngestConfig.INPUT_TOPIC,
                description = "The input topic whose partitions cursors count offsets of (default ${DEFAULT-VALUE};"
                        + " setting " + IngestConfig.INPUT_TOPIC + ")")
        String topic;

        @Option(names = "--out", required = true, description = "The Arrow IPC stream file to write ('-' = stdout)")
        String out;

        Map<String, String> params() {
            return TrainingReads.cliParams(
                    "columns", columns,
                    "experiment", experiment,
                    "policy_version_min", policyVersionMin,
                    "policy_version_max", policyVersionMax,
                    "reward_min", rewardMin,
                    "reward_max", rewardMax,
                    "include_in_training", includeInTraining,
                    "created_from", createdFrom,
                    "created_before", createdBefore,
                    "batch_rows", batchRows);
        }
    }

    /** Writes the stream to the --out file and prints the summary line; exit 2 for a request the table refuses. */
    private static int write(QueryOptions options, StreamOpener opener) throws Exception {
        RowStream stream;
        try {
            stream = opener.open();
        } catch (TableSnapshots.SnapshotException e) {
            return SnapshotCommand.refused(e);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            return 2;
        } catch (RolloutTableException.StaleCursor e) {
            System.err.println(e.getMessage());
            return 4;
        }
        boolean toStdout = options.out.equals("-");
        long rows;
        try (OutputStream out = toStdout
                ? new BufferedOutputStream(System.out)
                : new BufferedOutputStream(Files.newOutputStream(Path.of(options.out)))) {
            rows = TrainingReads.write(stream, out);
        }
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("rows", rows);
        summary.put("cursor", stream.cursor().encode());
        summary.put("more", stream.more());
        String line = HttpEndpoint.JSON.writeValueAsString(summary);
        (toStdout ? System.err : System.out).println(line);
        return 0;
    }

    private interface StreamOpener {
        RowStream open();
    }

    @Command(
            name = "scan",
            mixinStandardHelpOptions = true,
            description = "Write every key's newest value (base + pending, deletes hidden) as an Arrow IPC stream;"
                    + " print {rows, cursor}: tail from the cursor for what comes after.")
    static final class Scan implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Mixin
        QueryOptions query;

        @Option(names = "--limit", description = "The most rows (default: every row)")
        Long limit;

        @Option(names = "--snapshot", description = "Read this snapshot instead of the live table")
        String snapshot;

        @Override
        public Integer call() throws Exception {
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                return write(query, () -> {
                    Map<String, String> params = query.params();
                    var scan = TrainingReads.query(params).withLimit(limit == null ? 0 : limit);
                    return snapshot == null ? t.scan(scan, query.topic) : t.scan(scan, query.topic, snapshot);
                });
            }
        }
    }

    @Command(
            name = "tail",
            mixinStandardHelpOptions = true,
            description = "Write the keys whose newest row became readable after a cursor (values and deletes,"
                    + " column _deleted) as an Arrow IPC stream; print {rows, cursor, more}. With --cursor-file the"
                    + " cursor is read from the file (absent: from the start) and the next one written back.")
    static final class Tail implements Callable<Integer> {
        @Mixin
        TableOptions table;

        @Mixin
        QueryOptions query;

        @Option(names = "--cursor", description = "The cursor a scan or tail printed (default: from the start)")
        String cursor;

        @Option(names = "--cursor-file", description = "Read the cursor from this file and write the next one to it")
        Path cursorFile;

        @Option(names = "--max-offsets", description = "The most offsets of a partition one answer covers")
        Long maxOffsets;

        @Override
        public Integer call() throws Exception {
            String from = cursor;
            if (from == null && cursorFile != null && Files.exists(cursorFile)) {
                from = Files.readString(cursorFile, StandardCharsets.UTF_8).trim();
            }
            String start = from;
            RowStream[] opened = new RowStream[1];
            try (RolloutTable t = RolloutTable.open(table.location(), table.settings(), new SimpleMeterRegistry())) {
                int status = write(query, () -> {
                    TailCursor at = start == null ? t.startCursor(query.topic) : TailCursor.decode(start);
                    opened[0] = t.tail(
                            at, query.topic, TrainingReads.query(query.params()), maxOffsets == null ? 0 : maxOffsets);
                    return opened[0];
                });
                if (status == 0 && cursorFile != null) {
                    Files.writeString(cursorFile, opened[0].cursor().encode() + "\n", StandardCharsets.UTF_8);
                }
                return status;
            }
        }
    }
}
