package dev.rolloutingest.merge;

import dev.rolloutingest.runtime.HttpAccess;
import dev.rolloutingest.runtime.HttpEndpoint;
import dev.rolloutingest.runtime.StreamsRuntime;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.PendingShard;
import dev.rolloutingest.table.snapshots.TableSnapshots;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
 * GET  /cooldowns       every cooldown record: kind, target (table URI, or table/shard), failures, until, active, last error
 * GET  /pending         per table and shard: pending generations and the oldest's age; each table's last round
 * POST /merge/{shard}   a manual merge, never gated by a cooldown                400 not a shard id
 * GET  /snapshots       every snapshot: name, version, created, rows, offsets per partition
 * POST /snapshots/{name}?until-offsets=0=1200,1=900
 *                       fold what is pending up to the cut (default: everything sealed; the passes are the
 *                       table's merges) and tag it: 201 with the snapshot; 400 a bad name or cut, 409 the name is taken
 * DELETE /snapshots/{name}  drop it: 204; 404 unknown
 * /tables/{table}/merge/{shard}, /tables/{table}/snapshots...   the same for one table of many; 404 unknown table
 * </pre>
 * The routes without a table serve a one-table deployment; with many tables they answer 400 naming the other form.
 */
final class MergeAdminApi {
    private final StreamsRuntime runtime;
    private final MergeTables tables;
    private final MergeConfig config;

    MergeAdminApi(StreamsRuntime runtime, MergeTables tables, MergeConfig config) {
        this.runtime = runtime;
        this.tables = tables;
        this.config = config;
    }

    void mount(HttpEndpoint http) {
        http.route("/cooldowns", HttpAccess.Access.READ, exchange -> HttpEndpoint.Response.json(200, cooldowns()));
        http.route("/pending", HttpAccess.Access.READ, exchange -> HttpEndpoint.Response.json(200, pending()));
        http.route("/merge/", HttpAccess.Access.ADMIN, exchange -> {
            Optional<MergeTables.Merging> only = only();
            if (only.isEmpty()) {
                return HttpEndpoint.Response.error(
                        400, "this deployment serves many tables: POST /tables/{table}/merge/{shard}");
            }
            return merge(
                    only.get(),
                    exchange.getRequestMethod(),
                    exchange.getRequestURI().getPath().substring("/merge/".length()));
        });
        http.route("/snapshots", HttpAccess.Access.READ_OR_ADMIN_TO_CHANGE, exchange -> {
            Optional<MergeTables.Merging> only = only();
            if (only.isEmpty()) {
                return HttpEndpoint.Response.error(
                        400, "this deployment serves many tables: /tables/{table}/snapshots");
            }
            return snapshots(
                    only.get(),
                    exchange.getRequestMethod(),
                    exchange.getRequestURI().getPath(),
                    exchange.getRequestURI().getRawQuery());
        });
        http.route("/tables/", HttpAccess.Access.READ_OR_ADMIN_TO_CHANGE, exchange -> {
            String rest = exchange.getRequestURI().getPath().substring("/tables/".length());
            int slash = rest.indexOf('/');
            String name = slash < 0 ? rest : rest.substring(0, slash);
            String sub = slash < 0 ? "" : rest.substring(slash);
            Optional<MergeTables.Merging> merging =
                    TableCatalog.nameProblem(name) == null ? tables.of(name) : Optional.empty();
            if (merging.isEmpty()) {
                return HttpEndpoint.Response.error(
                        404, "no table '" + name + "' under " + tables.catalog().uri());
            }
            if (sub.startsWith("/merge/")) {
                return merge(merging.get(), exchange.getRequestMethod(), sub.substring("/merge/".length()));
            }
            if (sub.equals("/snapshots") || sub.startsWith("/snapshots/")) {
                return snapshots(
                        merging.get(),
                        exchange.getRequestMethod(),
                        sub,
                        exchange.getRequestURI().getRawQuery());
            }
            return HttpEndpoint.Response.error(
                    404, "/tables/{table}/merge/{shard} or /tables/{table}/snapshots[/{name}]");
        });
    }

    /** The table of a one-table deployment, or empty with many. */
    private Optional<MergeTables.Merging> only() {
        return tables.catalog().isSingle() ? tables.of(TableCatalog.SINGLE) : Optional.empty();
    }

    private HttpEndpoint.Response merge(MergeTables.Merging merging, String method, String shard) throws Exception {
        if (!"POST".equals(method)) {
            return HttpEndpoint.Response.error(405, "POST /merge/{shard}");
        }
        if (!ShardId.isValid(shard)) {
            return HttpEndpoint.Response.error(400, "not a shard id (lowercase hyphenated UUID): " + shard);
        }
        return manual(merging, shard);
    }

    private HttpEndpoint.Response snapshots(MergeTables.Merging merging, String method, String path, String rawQuery) {
        RolloutTable table = merging.table();
        {
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
                        TableSnapshots.Cut cut = cut(rawQuery);
                        TableSnapshots.Snapshot created = table.snapshots().create(name, cut);
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
        }
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

    private HttpEndpoint.Response manual(MergeTables.Merging merging, String shard) throws Exception {
        try {
            ShardMerges.Outcome outcome = tables.passes()
                    .manual(tables.key(merging.name(), shard), merging.table(), shard)
                    .get(10, TimeUnit.MINUTES);
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
                // Which table (and, for a merge, which shard) is cooling down, by name and URI.
                if (MergeScheduler.MERGE.equals(c.kind())) {
                    MergeTables.TableShard tableShard = tables.parse(c.target());
                    row.put("table", tableShard.table());
                    row.put("table_uri", tableUri(tableShard.table()));
                    row.put("shard", tableShard.shard());
                } else {
                    row.put("table", tables.nameOf(c.target()).orElse(null));
                    row.put("table_uri", c.target());
                }
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

    private String tableUri(String name) {
        try {
            return tables.catalog().locationOf(name).uri();
        } catch (RuntimeException e) {
            return null; // a key of a name the catalog refuses: the row still lists it
        }
    }

    /** Per table this process merges, every shard with pending generations, as the table holds them. */
    Map<String, Object> pending() {
        long now = System.currentTimeMillis();
        List<Map<String, Object>> shards = new ArrayList<>();
        for (MergeTables.Merging merging : tables.active()) {
            Map<String, PendingShard> backlog;
            try {
                backlog = merging.table().generations().backlog();
            } catch (RuntimeException e) {
                continue; // unreadable now: its shards show again once it answers
            }
            for (PendingShard pending : backlog.values()) {
                if (pending.count() == 0) {
                    continue;
                }
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("table", merging.name());
                row.put("shard", pending.shard());
                row.put("pending", pending.count());
                row.put("oldest_age_ms", pending.oldestAgeMs(now));
                shards.add(row);
            }
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("total", shards.stream().mapToInt(s -> (int) s.get("pending")).sum());
        body.put("shards", shards);
        Map<String, Object> lastRounds = new TreeMap<>();
        tables.active().forEach(m -> lastRounds.put(m.name(), m.table().merges().lastRound()));
        if (tables.catalog().isSingle()) {
            body.put("last_round", lastRounds.get(TableCatalog.SINGLE));
        } else {
            body.put("last_rounds", lastRounds);
        }
        return body;
    }
}
