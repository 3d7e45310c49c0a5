package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiFunction;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The merge-worker's admin API on its HTTP endpoint:
 * <pre>
 * GET  /cooldowns       every cooldown record: kind, target, failures, until, active, last error
 * GET  /pending         per shard: pending generations and the oldest's age; the last round
 * POST /merge/{shard}   a manual merge, never gated by a cooldown                400 not a shard id
 * GET  /snapshots       every snapshot: name, version, created, rows, offsets per partition
 * POST /snapshots/{name}?until-offsets=0=1200,1=900
 *                       fold what is pending up to the cut (default: everything sealed; the passes are the
 *                       coordinator's) and tag it: 201 with the snapshot; 400 a bad name or cut, 409 the name is taken
 * DELETE /snapshots/{name}  drop it: 204; 404 unknown
 * </pre>
 */
final class MergeAdminApi {
    private final StreamsRuntime runtime;
    private final MergeCoordinator coordinator;
    private final RolloutTable table;
    private final MergeConfig config;

    MergeAdminApi(StreamsRuntime runtime, MergeCoordinator coordinator, RolloutTable table, MergeConfig config) {
        this.runtime = runtime;
        this.coordinator = coordinator;
        this.table = table;
        this.config = config;
    }

    void mount(HttpEndpoint http) {
        http.route("/cooldowns", HttpAccess.Access.READ, exchange -> HttpEndpoint.Response.json(200, cooldowns()));
        http.route("/pending", HttpAccess.Access.READ, exchange -> HttpEndpoint.Response.json(200, pending()));
        http.route("/merge/", HttpAccess.Access.ADMIN, exchange -> {
            if (!"POST".equals(exchange.getRequestMethod())) {
                return HttpEndpoint.Response.error(405, "POST /merge/{shard}");
            }
            String shard = exchange.getRequestURI().getPath().substring("/merge/".length());
            if (!ShardId.isValid(shard)) {
                return HttpEndpoint.Response.error(400, "not a shard id (lowercase hyphenated UUID): " + shard);
            }
            return manual(shard);
        });
        http.route("/snapshots", HttpAccess.Access.READ_OR_ADMIN_TO_CHANGE, exchange -> {
            String path = exchange.getRequestURI().getPath();
            String method = exchange.getRequestMethod();
            try {
                if (path.equals("/snapshots") || path.equals("/snapshots/")) {
                    if (!"GET".equals(method)) {
                        return HttpEndpoint.Response.error(405, "GET /snapshots, POST or DELETE /snapshots/{name}");
                    }
                    return HttpEndpoint.Response.json(200, table.snapshots().describeAll());
                }
                String name = path.substring("/snapshots/".length());
                switch (method) {
                    case "POST" -> {
                        TableSnapshots.Cut cut = cut(exchange.getRequestURI().getRawQuery());
                        TableSnapshots.Snapshot created = table.snapshots().create(name, cut, coordinator::fold);
                        return HttpEndpoint.Response.json(201, created.describe());
                    }
                    case "DELETE" -> {
                        table.snapshots().drop(name);
                        return new HttpEndpoint.Response(204, "application/json", new byte[0]);
                    }
                    default -> {
                        return HttpEndpoint.Response.error(405, "POST or DELETE /snapshots/{name}");
                    }
                }
            } catch (TableSnapshots.SnapshotException e) {
                return HttpEndpoint.Response.refused(e);
            } catch (IllegalArgumentException e) {
                return HttpEndpoint.Response.error(400, e.getMessage());
            }
        });
    }

    /** {@code until-offsets=0=1200,1=900}: partition=offset pairs of the input topic; none = everything sealed. */
    private TableSnapshots.Cut cut(String rawQuery) {
        Map<Integer, Long> offsets = new TreeMap<>();
        if (rawQuery != null && !rawQuery.isBlank()) {
            for (String param : rawQuery.split("&")) {
                String decoded = URLDecoder.decode(param, StandardCharsets.UTF_8);
                if (!decoded.startsWith("until-offsets=")) {
                    throw new IllegalArgumentException("unknown parameter in '" + decoded + "' (until-offsets)");
                }
                for (String pair : decoded.substring("until-offsets=".length()).split(",")) {
                    int eq = pair.indexOf('=');
                    try {
                        offsets.put(
                                Integer.parseInt(pair.substring(0, eq).trim()),
                                Long.parseLong(pair.substring(eq + 1).trim()));
                    } catch (RuntimeException e) {
                        throw new IllegalArgumentException(
                                "until-offsets takes partition=offset pairs, e.g. 0=1200,1=900; got '" + pair + "'");
                    }
                }
            }
        }
        return new TableSnapshots.Cut(config.snapshotTopic(), offsets);
    }

    private HttpEndpoint.Response manual(String shard) throws Exception {
        try {
            MergeCoordinator.Outcome outcome = coordinator.manual(shard).get(10, TimeUnit.MINUTES);
            if (outcome.failed()) {
                String why = outcome.error() instanceof RolloutTableException.GenerationUnreadable unreadable
                        ? ": generation " + unreadable.generation() + " cannot be read"
                        : "";
                return HttpEndpoint.Response.failure(500, "merge of shard " + shard + " failed" + why, outcome.error());
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("shard", shard);
            body.put("merged_generations", outcome.result().mergedGenerations());
            body.put("previous_watermark", outcome.result().previousWatermark());
            body.put("new_watermark", outcome.result().newWatermark());
            body.put("rows", outcome.result().rows());
            body.put("left_pending", outcome.result().leftover());
            body.put("duration_ms", outcome.duration().toMillis());
            return HttpEndpoint.Response.json(200, body);
        } catch (TimeoutException e) {
            return HttpEndpoint.Response.error(202, "merge of shard " + shard + " still running");
        }
    }

    private <V, T> List<T> readStore(String store, BiFunction<String, V, T> map) {
        ReadOnlyKeyValueStore<String, V> view = runtime.streams()
                .store(StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.<String, V>keyValueStore()));
        List<T> out = new ArrayList<>();
        try (KeyValueIterator<String, V> all = view.all()) {
            all.forEachRemaining(kv -> out.add(map.apply(kv.key, kv.value)));
        }
        return out;
    }

    List<Map<String, Object>> cooldowns() {
        long now = System.currentTimeMillis();
        try {
            return this.<Cooldown, Map<String, Object>>readStore(MergeStores.COOLDOWN_STORE, (key, c) -> {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("kind", c.kind());
                row.put("target", c.target());
                row.put("failures", c.failures());
                row.put(
                        "until",
                        c.untilMs() == 0
                                ? null
                                : Instant.ofEpochMilli(c.untilMs()).toString());
                row.put("active", c.activeAt(now));
                row.put("last_error", c.lastError());
                return row;
            });
        } catch (InvalidStateStoreException e) {
            return List.of();
        }
    }

    Map<String, Object> pending() {
        long now = System.currentTimeMillis();
        List<Map<String, Object>> shards;
        try {
            shards = this.<ShardBacklog, Map<String, Object>>readStore(MergeStores.BACKLOG_STORE, (shard, backlog) -> {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("shard", shard);
                row.put("pending", backlog.count());
                row.put("oldest_age_ms", backlog.oldestAgeMs(now));
                return row;
            });
        } catch (InvalidStateStoreException e) {
            shards = List.of();
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("total", shards.stream().mapToInt(s -> (int) s.get("pending")).sum());
        body.put("shards", shards);
        body.put("last_round", coordinator.lastRound());
        return body;
    }
}
