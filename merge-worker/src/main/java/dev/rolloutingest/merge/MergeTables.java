package dev.rolloutingest.merge;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * The tables the merge-worker serves, opened on first use (each merges through its own {@link
 * dev.rolloutingest.table.merge.TableMerges}), and the passes this process asked of them ({@link ShardMerges}). In the
 * stores, cooldowns and events a table's shard is named by {@link #key}: the shard alone for a one-table deployment
 * (the keys it always had), {@code table/shard} for many tables.
 */
final class MergeTables implements AutoCloseable {
    /** A table the merge-worker has merged or reconciled. */
    record Merging(String name, RolloutTable table) {}

    /** A shard of a table, as the stores name it. */
    record TableShard(String table, String shard) {}

    private final TableCatalog tables;
    private final ShardMerges passes;
    private final Consumer<RolloutTable> firstUse;
    private final Map<String, Merging> merging = new ConcurrentHashMap<>();
    private volatile boolean closed;

    MergeTables(TableCatalog tables, ShardMerges passes) {
        this(tables, passes, table -> {});
    }

    /** @param firstUse told of each table as this merge-worker first uses it */
    MergeTables(TableCatalog tables, ShardMerges passes, Consumer<RolloutTable> firstUse) {
        this.tables = tables;
        this.passes = passes;
        this.firstUse = firstUse;
    }

    /** The passes this process asked of its tables. */
    ShardMerges passes() {
        return passes;
    }

    TableCatalog catalog() {
        return tables;
    }

    /** The table of {@code name}; empty when there is no such table. */
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
                firstUse.accept(table.get());
                m = new Merging(name, table.get());
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
        return parseKey(key);
    }

    /** The table's shard a store key names. */
    static TableShard parseKey(String key) {
        int slash = key.lastIndexOf('/');
        return slash < 0
                ? new TableShard(TableCatalog.SINGLE, key)
                : new TableShard(key.substring(0, slash), key.substring(slash + 1));
    }

    /** Every table of the deployment, by name (a listing of the catalog's root). */
    List<String> names() {
        return tables.names();
    }

    /** The tables merged or reconciled so far. */
    List<Merging> active() {
        return new ArrayList<>(merging.values());
    }

    /** Stops every table's merges: a round committing finishes, one being prepared is abandoned whole. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        merging.values().forEach(m -> m.table().merges().close());
    }
}
