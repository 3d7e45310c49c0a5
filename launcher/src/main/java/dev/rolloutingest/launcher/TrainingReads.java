package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.HttpEndpoint.Response;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.reads.PartitionShare;
import dev.rolloutingest.table.reads.RowStream;
import dev.rolloutingest.table.reads.ScanQuery;
import dev.rolloutingest.table.reads.TailCursor;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;

/**
 * Reads for training over HTTP, as Arrow IPC streams ({@value #ARROW_STREAM}) written while the client reads them:
 * <pre>
 * GET {prefix}:scan?columns=&amp;experiment=&amp;policy_version_min=&amp;...&amp;limit=&amp;batch_rows=&amp;snapshot=&amp;share=
 *     every key's newest value (base + pending), deletes hidden; header Rollout-Cursor: where a tail goes on from
 * GET {prefix}:tail?cursor=&amp;columns=&amp;(filters)&amp;max_offsets=&amp;batch_rows=&amp;share=
 *     the keys whose newest row became readable after the cursor (none = from the start), values and deletes
 *     (column _deleted), each once; Rollout-Cursor: the next cursor; Rollout-Tail-More: true when a partition had
 *     more than max_offsets new offsets (tail again at once)
 * </pre>
 * {@code share=i/n} reads one of n disjoint shares, by the partition of each key's newest row
 * ({@link PartitionShare}): n data-parallel readers get every key once between them.
 * 400 a bad parameter, column, filter, limit or cursor (the reason in the JSON body); 404 an unknown snapshot; 410 a
 * cursor the table can no longer answer exactly (scan again and tail from the scan's cursor); 429 too many reads at
 * once; 503 the table cannot be read now. A failure once the stream has begun drops the connection, so a client's
 * Arrow reader fails rather than seeing a short answer that looks complete.
 *
 * <p>One instance serves any table: the routes take the table from a supplier, and {@link #scan} / {@link #tail}
 * take it as an argument, so a catalog of tables can mount them under its own paths.
 */
final class TrainingReads {
    static final String ARROW_STREAM = "application/vnd.apache.arrow.stream";
    static final String CURSOR_HEADER = "Rollout-Cursor";
    static final String MORE_HEADER = "Rollout-Tail-More";

    static final List<String> FILTERS = List.of(
            "experiment",
            "policy_version_min",
            "policy_version_max",
            "reward_min",
            "reward_max",
            "include_in_training",
            "created_from",
            "created_before");
    private static final Set<String> SCAN_PARAMS = params("columns", "limit", "batch_rows", "snapshot", "share");
    private static final Set<String> TAIL_PARAMS = params("cursor", "columns", "max_offsets", "batch_rows", "share");
    /** A Flight read's parameters: its cursor and share are the ticket's. */
    static final Set<String> FLIGHT_PARAMS = params("columns", "max_offsets", "batch_rows");

    private final String topic;

    /** @param topic the input topic whose partitions cursors count offsets of */
    TrainingReads(String topic) {
        this.topic = topic;
    }

    /** Mounts {@code path}:scan and {@code path}:tail over the table {@code table} supplies. */
    void mount(HttpEndpoint http, String path, Supplier<RolloutTable> table) {
        http.route(path + ":scan", HttpAccess.Access.READ, exchange -> {
            if (!"GET".equals(exchange.getRequestMethod())) {
                return Response.error(405, "only GET");
            }
            return scan(table.get(), ReadApi.query(exchange.getRequestURI().getRawQuery()));
        });
        http.route(path + ":tail", HttpAccess.Access.READ, exchange -> {
            if (!"GET".equals(exchange.getRequestMethod())) {
                return Response.error(405, "only GET");
            }
            return tail(table.get(), ReadApi.query(exchange.getRequestURI().getRawQuery()));
        });
    }

    /** A scan of {@code table} as an HTTP answer. */
    Response scan(RolloutTable table, Map<String, String> params) {
        return answer(() -> {
            check(params, SCAN_PARAMS);
            ScanQuery query = query(params).withLimit(longParam(params, "limit", 0, 1, Long.MAX_VALUE));
            String snapshot = params.get("snapshot");
            RowStream stream = snapshot == null ? table.scan(query, topic) : table.scan(query, topic, snapshot);
            return stream(stream, Map.of(CURSOR_HEADER, stream.cursor().encode()));
        });
    }

    /** A tail of {@code table} as an HTTP answer. */
    Response tail(RolloutTable table, Map<String, String> params) {
        return answer(() -> {
            check(params, TAIL_PARAMS);
            ScanQuery query = query(params);
            String cursor = params.get("cursor");
            TailCursor from = cursor == null ? table.startCursor(topic) : TailCursor.decode(cursor);
            long maxOffsets = maxOffsets(params);
            RowStream stream = table.tail(from, topic, query, maxOffsets);
            return stream(
                    stream,
                    Map.of(CURSOR_HEADER, stream.cursor().encode(), MORE_HEADER, Boolean.toString(stream.more())));
        });
    }

    /** Writes the whole stream in the Arrow IPC streaming format, then closes it. */
    static long write(RowStream stream, OutputStream out) throws IOException {
        try (stream;
                ArrowStreamWriter writer =
                        new ArrowStreamWriter(stream.getVectorSchemaRoot(), null, Channels.newChannel(out))) {
            writer.start();
            while (stream.loadNextBatch()) {
                writer.writeBatch();
                out.flush();
            }
            writer.end();
            return stream.rowsRead();
        }
    }

    private static Response stream(RowStream stream, Map<String, String> headers) {
        return Response.streamed(200, ARROW_STREAM, headers, new HttpEndpoint.BodyWriter() {
            @Override
            public void write(OutputStream out) throws Exception {
                TrainingReads.write(stream, out);
            }

            @Override
            public void abandon() throws Exception {
                stream.close();
            }
        });
    }

    private interface Answer {
        Response get();
    }

    /** The table's refusals as HTTP statuses, before anything is streamed. */
    private static Response answer(Answer answer) {
        try {
            return answer.get();
        } catch (TableSnapshots.SnapshotException e) {
            return Response.refused(e);
        } catch (RolloutTableException.StaleCursor e) {
            return Response.error(410, e.getMessage());
        } catch (RolloutTableException.Busy e) {
            return Response.retryLater(429, e.getMessage());
        } catch (RolloutTableException.TooManyPendingRows e) {
            return Response.error(503, e.getMessage());
        } catch (RolloutTableException.PendingBacklogTooLarge e) {
            return Response.error(
                    503,
                    "shard " + e.shard() + " has " + e.pending() + " pending generations, over the" + " read cap of "
                            + e.cap() + " (" + e.capKey() + "); retry once the merge-worker has caught up");
        } catch (RolloutTableException e) {
            return Response.failure(503, "the table cannot be read right now", e);
        } catch (IllegalArgumentException e) {
            return Response.error(400, e.getMessage());
        }
    }

    /** The columns and filters of a scan or tail, from request parameters (the CLI builds the same map). */
    static ScanQuery query(Map<String, String> params) {
        ScanQuery query = ScanQuery.all();
        String columns = params.get("columns");
        if (columns != null) {
            List<String> names = Arrays.stream(columns.split(","))
                    .map(String::trim)
                    .filter(n -> !n.isEmpty())
                    .toList();
            if (names.isEmpty()) {
                throw new IllegalArgumentException(
                        "columns is empty: name columns separated by commas, or leave it out");
            }
            query = query.withColumns(names);
        }
        query = query.withExperiment(params.get("experiment"))
                .withPolicyVersions(longOrNull(params, "policy_version_min"), longOrNull(params, "policy_version_max"))
                .withRewards(doubleOrNull(params, "reward_min"), doubleOrNull(params, "reward_max"))
                .withCreated(instantOrNull(params, "created_from"), instantOrNull(params, "created_before"));
        String training = params.get("include_in_training");
        if (training != null) {
            if (!training.equals("true") && !training.equals("false")) {
                throw new IllegalArgumentException("include_in_training must be true or false, was '" + training + "'");
            }
            query = query.withIncludeInTraining(Boolean.parseBoolean(training));
        }
        String share = params.get("share");
        if (share != null) {
            query = query.withShare(PartitionShare.parse(share));
        }
        return query.withBatchRows((int) longParam(params, "batch_rows", 0, 1, Integer.MAX_VALUE));
    }

    /** The offsets per partition a tail answer may cover, {@code max_offsets} (0 = the table's setting). */
    static long maxOffsets(Map<String, String> params) {
        return longParam(params, "max_offsets", 0, 1, Long.MAX_VALUE);
    }

    private static Set<String> params(String... own) {
        java.util.Set<String> all = new java.util.LinkedHashSet<>(List.of(own));
        all.addAll(FILTERS);
        return all;
    }

    static void check(Map<String, String> params, Set<String> allowed) {
        for (String name : params.keySet()) {
            if (!allowed.contains(name)) {
                throw new IllegalArgumentException(
                        "unknown parameter '" + name + "' (" + String.join(", ", allowed) + ")");
            }
        }
    }

    private static long longParam(Map<String, String> params, String name, long fallback, long min, long max) {
        Long value = longOrNull(params, name);
        if (value == null) {
            return fallback;
        }
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", was " + value);
        }
        return value;
    }

    private static Long longOrNull(Map<String, String> params, String name) {
        String value = params.get(name);
        if (value == null) {
            return null;
        }
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, was '" + value + "'");
        }
    }

    private static Double doubleOrNull(Map<String, String> params, String name) {
        String value = params.get(name);
        if (value == null) {
            return null;
        }
        try {
            return Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a number, was '" + value + "'");
        }
    }

    private static Instant instantOrNull(Map<String, String> params, String name) {
        String value = params.get(name);
        if (value == null) {
            return null;
        }
        try {
            return Instant.parse(value.trim());
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(
                    name + " must be an ISO-8601 instant such as 2026-12-01T00:00:00Z, was '" + value + "'");
        }
    }

    /** The parameters of a scan or tail as the CLI passes them (nulls left out). */
    static Map<String, String> cliParams(Object... nameValuePairs) {
        Map<String, String> params = new LinkedHashMap<>();
        for (int i = 0; i < nameValuePairs.length; i += 2) {
            if (nameValuePairs[i + 1] != null) {
                params.put((String) nameValuePairs[i], nameValuePairs[i + 1].toString());
            }
        }
        return params;
    }
}
