package dev.rolloutingest.launcher;

import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.HttpEndpoint.Response;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
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
 * </pre>
 * Every rollout read takes {@code ?snapshot=NAME}: the read sees that snapshot only (404 unknown snapshot, 400 a
 * name that cannot be one). Over the pending hard cap a read answers 503 with the shard and what to do.
 */
final class ReadApi {
    static final int DEFAULT_LIMIT = 100;
    private final RolloutTable table;
    private final Deletes deletes;
    private final Duration deleteWait;
    private final TrainingReads training;

    ReadApi(RolloutTable table) {
        this(table, null, Duration.ZERO, SettingDefaults.inputTopic());
    }

    /**
     * @param deletes publishes tombstones for DELETE; null = deletes are refused (405)
     * @param topic the input topic, whose partitions the cursors of scans and tails count offsets of
     */
    ReadApi(RolloutTable table, Deletes deletes, Duration deleteWait, String topic) {
        this.table = table;
        this.deletes = deletes;
        this.deleteWait = deleteWait;
        this.training = new TrainingReads(topic);
    }

    void mount(HttpEndpoint http) {
        mountSnapshots(http);
        training.mount(http, "/rollouts", () -> table);
        http.route("/rollouts", HttpAccess.Access.READ_OR_ADMIN_TO_CHANGE, exchange -> {
            String path = exchange.getRequestURI().getRawPath();
            if ("DELETE".equals(exchange.getRequestMethod()) && path.startsWith("/rollouts/")) {
                return delete(decode(path.substring("/rollouts/".length())));
            }
            if (!"GET".equals(exchange.getRequestMethod())) {
                return Response.error(405, "only GET, and DELETE of one rollout");
            }
            try {
                Map<String, String> params = query(exchange.getRequestURI().getRawQuery());
                if (path.equals("/rollouts") || path.equals("/rollouts/")) {
                    return list(params);
                }
                String snapshot = params.get("snapshot");
                if (params.size() > (snapshot == null ? 0 : 1)) {
                    throw new IllegalArgumentException("a single rollout takes only the parameter 'snapshot'");
                }
                String rest = path.substring("/rollouts/".length());
                if (rest.endsWith("/payload")) {
                    return payload(decode(rest.substring(0, rest.length() - "/payload".length())), snapshot);
                }
                return get(decode(rest), snapshot);
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
        });
    }

    private void mountSnapshots(HttpEndpoint http) {
        http.route("/snapshots", HttpAccess.Access.READ, exchange -> {
            if (!"GET".equals(exchange.getRequestMethod())) {
                return Response.error(405, "only GET (snapshots are made and dropped on the merge-worker)");
            }
            return Response.json(200, table.snapshots().describeAll());
        });
    }

    private Response delete(String recordId) throws InterruptedException {
        if (deletes == null) {
            return Response.error(405, "this read API publishes no deletes: start serve with --bootstrap-servers");
        }
        if (recordId.isEmpty() || recordId.contains("/")) {
            return Response.error(400, "DELETE /rollouts/{record_id}");
        }
        var at = deletes.publish(recordId);
        boolean visible = Deletes.awaitGone(table, recordId, deleteWait);
        Map<String, Object> body = new java.util.LinkedHashMap<>();
        body.put("record_id", recordId);
        body.put("partition", at.partition());
        body.put("offset", at.offset());
        body.put("visible", visible);
        return Response.json(visible ? 200 : 202, body);
    }

    private Optional<RolloutRow> read(String recordId, String snapshot) {
        return snapshot == null ? table.get(recordId) : table.get(recordId, snapshot);
    }

    private Response get(String recordId, String snapshot) {
        Optional<RolloutRow> row = read(recordId, snapshot);
        return row.map(r -> Response.json(200, RowJson.of(r)))
                .orElseGet(() -> Response.error(404, "no rollout with record_id " + recordId));
    }

    private Response payload(String recordId, String snapshot) {
        Optional<RolloutRow> row = read(recordId, snapshot);
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

    private Response list(Map<String, String> params) {
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
