package dev.rolloutingest.bench;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.catalog.TableCatalog;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The tables of a many-tables run: pending counts from the merge-worker's /pending (every table and shard in one
 * answer, no listing of 100 tables a second), records from the tables themselves.
 */
final class ManyTablesTarget implements SustainedTarget {
    private final Path root;
    private final int mergePort;
    private final int partitions;
    private final TableCatalog catalog;

    /** @param tables the run's table count: the catalog's bound of tables open at once */
    ManyTablesTarget(Path root, int mergePort, int partitions, int tables) {
        this.root = root;
        this.mergePort = mergePort;
        this.partitions = partitions;
        this.catalog = TableCatalog.under(
                TableLocation.local(root),
                TableSettings.DEFAULTS
                        .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
                        .with(TableSettings.PENDING_MAX_GENERATIONS, 0),
                new SimpleMeterRegistry(),
                tables);
    }

    private List<RolloutTable> all() {
        return catalog.names().stream().map(catalog::require).toList();
    }

    /**
     * Offsets sealed, per partition the furthest any table's seals (or merged watermark) reach: a seal covers its
     * partition's whole range in every table that got rows of it, so summing tables would count records again.
     */
    @Override
    public long sealed() {
        long[] next = new long[partitions];
        for (RolloutTable table : all()) {
            Map<String, Long> watermarks = table.generations().watermarks();
            for (int p = 0; p < partitions; p++) {
                String shard = ShardId.of(SustainedRig.TOPIC, p);
                List<Long> generations = table.generations().sealedBetween(shard, 0, -1L);
                long last = generations.isEmpty() ? 0 : generations.get(generations.size() - 1);
                next[p] = Math.max(next[p], Math.max(last, watermarks.getOrDefault(shard, 0L)));
            }
        }
        return java.util.Arrays.stream(next).sum();
    }

    @Override
    public long baseRows() {
        return all().stream().mapToLong(RolloutTable::countBaseRows).sum();
    }

    @Override
    public Worst worst() throws Exception {
        com.fasterxml.jackson.databind.JsonNode pending = pending();
        int worst = 0;
        String where = "";
        for (com.fasterxml.jackson.databind.JsonNode shard : pending.path("shards")) {
            if (shard.path("pending").asInt() > worst) {
                worst = shard.path("pending").asInt();
                where = shard.path("table").asText() + "/" + shard.path("shard").asText();
            }
        }
        return new Worst(where, worst, Integer.toString(pending.path("total").asInt()));
    }

    @Override
    public int pendingTotal() throws Exception {
        return pending().path("total").asInt();
    }

    private com.fasterxml.jackson.databind.JsonNode pending() throws Exception {
        return AppHttp.pendingOf(mergePort);
    }

    @Override
    public void baseIds(java.util.function.BiConsumer<String, String> id) throws Exception {
        for (String name : catalog.names()) {
            SustainedTarget.readIds(root.resolve(name), name, id);
        }
    }

    @Override
    public void close() {
        catalog.close();
    }
}
