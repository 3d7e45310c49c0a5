package dev.rolloutingest.merge;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The tables the merge-worker serves, each with the round coordinator that is its one committer in this process,
 * made on first use. In the stores, cooldowns and events a table's shard is named by {@link #key}: the shard alone
 * for a one-table deployment (the keys it always had), {@code table/shard} for many tables.
 */
final class MergeTables implements AutoCloseable {
    /** A table and its committer. */
    record Merging(String name, RolloutTable table, MergeCoordinator coordinator) {}

    /** A shard of a table, as the stores name it. */
    record TableShard(String table, String shard) {}

    private final TableCatalog tables;
    private final Function<RolloutTable, MergeCoordinator> newCoordinator;
    private final Map<String, Merging> merging = new ConcurrentHashMap<>();
    private volatile boolean closed;

    MergeTables(TableCatalog tables, Function<RolloutTable, MergeCoordinator> newCoordinator) {
        this.tables = tables;
        this.newCoordinator = newCoordinator;
    }

    TableCatalog catalog() {
        return tables;
    }

    /** The table of {@code name} with its committer; empty when there is no such table. */
    Optional<Merging> of(String name) {
        Merging m = merging.get(name);
        if (m != null) {
            return Optional.of(m);
        }
        synchronized (this) {
            if (closed) {
                return Optional.empty();
            }
            m = merging.get(name);
            if (m == null) {
                Optional<RolloutTable> table = tables.open(name);
                if (table.isEmpty()) {
                    return Optional.empty();
                }
                m = new Merging(name, table.get(), newCoordinator.apply(table.get()));
                merging.put(name, m);
            }
            return Optional.of(m);
        }
    }

    /** The table an event names by its URI, when it is one of this deployment's. */
    Optional<String> nameOf(String tableUri) {
        return tables.nameOf(tableUri);
    }

    /** The store key of a table's shard ({@link TableCatalog#shardKey}). */
    String key(String table, String shard) {
        return tables.shardKey(table, shard);
    }

    /** The table's shard a store key names. */
    TableShard parse(String key) {
        int slash = key.lastIndexOf('/');
        return slash < 0
                ? new TableShard(TableCatalog.SINGLE, key)
                : new TableShard(key.substring(0, slash), key.substring(slash + 1));
    }

    /** Every table of the deployment, by name (a listing of the catalog's root). */
    List<String> names() {
        return tables.names();
    }

    /** The tables with a committer so far. */
    List<Merging> active() {
        return new ArrayList<>(merging.values());
    }

    /** Stops every committer: the round in flight commits or is abandoned whole. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        merging.values().forEach(m -> m.coordinator().close());
    }
}
