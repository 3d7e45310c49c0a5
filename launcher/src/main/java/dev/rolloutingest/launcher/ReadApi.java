package dev.rolloutingest.launcher;

import com.sun.net.httpserver.HttpExchange;
import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.HttpEndpoint.Response;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The read API on the JDK HTTP server (see {@link HttpEndpoint}):
 * <pre>
 * GET /rollouts/{record_id}            one rollout (payload as its size)       404 unknown id
 * GET /rollouts/{record_id}/payload    the payload bytes, application/octet-stream
 * GET /rollouts?experiment=&amp;rollout_id=&amp;limit=&amp;offset=    a page      400 bad parameter
 * GET /rollouts:scan?columns=&amp;...     every key's newest value as an Arrow IPC stream ({@link TrainingReads})
 * GET /rollouts:tail?cursor=&amp;...      what became readable after a cursor, as an Arrow IPC stream
 * GET /snapshots                        the snapshots, as {@code snapshot list} prints them
 * DELETE /rollouts/{record_id}          publishes its tombstone; 200 once reads no longer return it, 202 when not
 *                                       yet (sealed later); 405 when this server has no Kafka producer
 * GET /tables                           every table: rows, pending generations, last commit, size
 * /tables/{table}/rollouts..., /tables/{table}/rollouts:scan, :tail, /tables/{table}/snapshots
 *                                       the routes above for one table of many (404 unknown)
 * </pre>
 * The routes without a table serve a one-table deployment; with many tables they answer 400 naming the other form.
 * Every rollout read takes {@code ?snapshot=NAME}: the read sees that snapshot only (404 unknown snapshot, 400 a
 * name that cannot be one). Over the pending hard cap a read answers 503 with the shard and what to do.
 */
final class ReadApi {
    static final int DEFAULT_LIMIT = 100;
    private final TableCatalog tables;
    private final Deletes deletes;
    private final Duration deleteWait;
    private final TrainingReads training;

    ReadApi(RolloutTable table) {
        this(TableCatalog.single(table), null, Duration.ZERO, SettingDefaults.inputTopic());
    }

    /**
     * @param deletes publishes tombstones for DELETE; null = deletes are refused (405)
     * @param topic the input topic, whose partitions the cursors of scans and tails count offsets of
     */
    ReadApi(TableCatalog tables, Deletes deletes, Duration deleteWait, String topic) {
        this.tables = tables;
        this.deletes = deletes;
        this.deleteWait = deleteWait;
        this.training = new TrainingReads(topic);
    }

    void mount(HttpEndpoint http) {
        http.route("/snapshots", HttpAccess.Access.READ, exchange -> {
            if (!tables.isSingle()) {
                return Response.error(400, "this deployment serves many tables: GET /tables/{table}/snapshots");
            }
            return snapshots(tables.only(), exchange.getRequestMethod());
        });
        if (tables.isSingle()) {
            training.mount(http, "/rollouts", tables::only);
        }
        http.route("/rollouts", HttpAccess.Access.READ_OR_ADMIN_TO_CHANGE, exchange -> {
            if (!tables.isSingle()) {
                return Response.error(400, "this deployment serves many tables: /tables/{table}/rollouts");
            }
            return rollouts(
                    tables.only(), null, exchange, exchange.getRequestURI().getRawPath());
        });
        http.route("/tables", HttpAccess.Access.READ_OR_ADMIN_TO_CHANGE, exchange -> {
            String path = exchange.getRequestURI().getRawPath();
            if (path.equals("/tables") || path.equals("/tables/")) {
                if (!"GET".equals(exchange.getRequestMethod())) {
                    return Response.error(405, "only GET /tables");
                }
                return Response.json(200, TableSummaries.describeAll(tables));
            }
            String rest = path.substring("/tables/".length());
            int slash = rest.indexOf('/');
            String name = decode(slash < 0 ? rest : rest.substring(0, slash));
            String sub = slash < 0 ? "" : rest.substring(slash);
            Optional<RolloutTable> table = tables.open(name);
            if (table.isEmpty()) {
                return Response.error(404, "no table '" + name + "' under " + tables.uri());
            }
            if (sub.equals("/snapshots")) {
                return snapshots(table.get(), exchange.getRequestMethod());
            }
            if (sub.equals("/rollouts:scan") || sub.equals("/rollouts:tail")) {
                if (!"GET".equals(exchange.getRequestMethod())) {
                    return Response.error(405, "only GET");
                }
                Map<String, String> params = query(exchange.getRequestURI().getRawQuery());
                return sub.endsWith(":scan") ? training.scan(table.get(), params) : training.tail(table.get(), params);
            }
            if (sub.equals("/rollouts") || sub.startsWith("/rollouts/")) {
                return rollouts(table.get(), tables.isSingle() ? null : name, exchange, sub);
            }
            return Response.error(
                    404, "/tables/{table}/rollouts[/{record_id}], /tables/{table}/rollouts:scan, :tail or /snapshots");
        });
    }

    private Response snapshots(RolloutTable table, String method) {
        if (!"GET".equals(method)) {
            return Response.error(405, "only GET (snapshots are made and dropped on the merge-worker)");
        }
        return Response.json(200, table.snapshots().describeAll());
    }

    /**
     * The /rollouts routes of one table; {@code path} starts at /rollouts.
     *
     * @param tableName the table's name when it is one of many (its deletes name it), else null
     */
    private Response rollouts(RolloutTable table, String tableName, HttpExchange exchange, String path)
            throws Exception {
        {
            if ("DELETE".equals(exchange.getRequestMethod()) && path.startsWith("/rollouts/")) {
                return delete(table, tableName, decode(path.substring("/rollouts/".length())));
            }
            if (!"GET".equals(exchange.getRequestMethod())) {
                return Response.error(405, "only GET, and DELETE of one rollout");
            }
            try {
                Map<String, String> params = query(exchange.getRequestURI().getRawQuery());
                if (path.equals("/rollouts") || path.equals("/rollouts/")) {
                    return list(table, params);
                }
                String snapshot = params.get("snapshot");
                if (params.size() > (snapshot == null ? 0 : 1)) {
                    throw new IllegalArgumentException("a single rollout takes only the parameter 'snapshot'");
                }
                String rest = path.substring("/rollouts/".length());
                if (rest.endsWith("/payload")) {
                    return payload(table, decode(rest.substring(0, rest.length() - "/payload".length())), snapshot);
                }
                return get(table, decode(rest), snapshot);
            } catch (TableSnapshots.SnapshotException e) {
                return Response.refused(e);
            } catch (RolloutTableException.PendingBacklogTooLarge e) {
                return Response.error(
                        503,
                        "shard " + e.shard() + " has " + e.pending() + " pending generations, over the"
                                + " read cap of " + e.cap() + " (" + e.capKey()
                                + "); retry once the merge-worker has caught up");
            } catch (RolloutTableException.GenerationUnreadable e) {
                return Response.failure(
                        503, "generation " + e.generation() + " of shard " + e.shard() + " cannot be read", e);
            } catch (RolloutTableException e) {
                return Response.failure(503, "the table cannot be read right now", e);
            } catch (IllegalArgumentException e) {
                return Response.error(400, e.getMessage());
            }
        }
    }

    private Response delete(RolloutTable table, String tableName, String recordId) throws InterruptedException {
        if (deletes == null) {
            return Response.error(405, "this read API publishes no deletes: start serve with --bootstrap-servers");
        }
        if (recordId.isEmpty() || recordId.contains("/")) {
            return Response.error(400, "DELETE /rollouts/{record_id}");
        }
        var at = deletes.publish(recordId, tableName);
        boolean visible = Deletes.awaitGone(table, recordId, deleteWait);
        Map<String, Object> body = new java.util.LinkedHashMap<>();
        body.put("record_id", recordId);
        body.put("partition", at.partition());
        body.put("offset", at.offset());
        body.put("visible", visible);
        return Response.json(visible ? 200 : 202, body);
    }

    private static Optional<RolloutRow> read(RolloutTable table, String recordId, String snapshot) {
        return snapshot == null ? table.get(recordId) : table.get(recordId, snapshot);
    }

    private static Response get(RolloutTable table, String recordId, String snapshot) {
        Optional<RolloutRow> row = read(table, recordId, snapshot);
        return row.map(r -> Response.json(200, RowJson.of(r)))
                .orElseGet(() -> Response.error(404, "no rollout with record_id " + recordId));
    }

    private static Response payload(RolloutTable table, String recordId, String snapshot) {
        Optional<RolloutRow> row = read(table, recordId, snapshot);
        if (row.isEmpty()) {
            return Response.error(404, "no rollout with record_id " + recordId);
        }
        ByteBuffer payload = row.get().rollout().getBinaryPayload();
        if (payload == null) {
            return Response.error(404, "rollout " + recordId + " has no binary_payload");
        }
        byte[] bytes = new byte[payload.remaining()];
        payload.duplicate().get(bytes);
        return new Response(200, "application/octet-stream", bytes);
    }

    private static Response list(RolloutTable table, Map<String, String> params) {
        for (String name : params.keySet()) {
            if (!List.of("experiment", "rollout_id", "limit", "offset", "snapshot")
                    .contains(name)) {
                throw new IllegalArgumentException(
                        "unknown parameter '" + name + "' (experiment, rollout_id, limit, offset, snapshot)");
            }
        }
        int limit = intParam(params, "limit", DEFAULT_LIMIT, 1, 10_000);
        int offset = intParam(params, "offset", 0, 0, Integer.MAX_VALUE);
        ListQuery query = new ListQuery(params.get("experiment"), params.get("rollout_id"), limit, offset, false);
        String snapshot = params.get("snapshot");
        List<Map<String, Object>> rows = (snapshot == null ? table.list(query) : table.list(query, snapshot))
                .stream().map(RowJson::of).toList();
        return Response.json(200, Map.of("rollouts", rows, "count", rows.size(), "limit", limit, "offset", offset));
    }

    private static int intParam(Map<String, String> params, String name, int fallback, int min, int max) {
        String value = params.get(name);
        if (value == null) {
            return fallback;
        }
        try {
            int parsed = Integer.parseInt(value);
            if (parsed < min || parsed > max) {
                throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", was " + value);
            }
            return parsed;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a whole number, was '" + value + "'");
        }
    }

    static Map<String, String> query(String raw) {
        Map<String, String> params = new HashMap<>();
        if (raw == null || raw.isEmpty()) {
            return params;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String key = decode(eq < 0 ? pair : pair.substring(0, eq));
            params.put(key, eq < 0 ? "" : decode(pair.substring(eq + 1)));
        }
        return params;
    }

    private static String decode(String value) {
        return URLDecoder.decode(value, StandardCharsets.UTF_8);
    }
}
