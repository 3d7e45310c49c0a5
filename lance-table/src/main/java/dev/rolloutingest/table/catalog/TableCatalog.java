package dev.rolloutingest.table.catalog;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.SharedByTables;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeCapacity;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.ObjectStores;
import dev.rolloutingest.table.storage.SharedLanceCache;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;

/**
 * The tables a deployment serves: either the one table of {@code rollout.table.uri} (named {@link #SINGLE}), or every
 * table under a root URI ({@code rollout.tables.root}), each a Lance dataset with its MemWAL at {@code <root>/<name>},
 * readable by a plain lance-core reader. A table is created on its first record ({@link #createOrOpen}); readers open
 * existing ones only ({@link #open}). Tables stay open once opened (their count is capped by {@code maxTables}); what
 * they keep between uses is held under one memory budget ({@link ResidentBudget}), and their lance-core caches are one.
 *
 * <p>Thread-safe: the ingest's stream threads, the merge-worker's rounds and the read API share one catalog.
 *
 * <p>Over 300 lines because naming, listing, opening under the cap and the shared caches are the one lock's business;
 * what the tables keep between uses is {@link ResidentBudget}'s.
 */
public final class TableCatalog implements AutoCloseable {
    /** The name of the table of a one-table deployment. */
    public static final String SINGLE = "default";

    /** A table's name: one path segment, letters, digits, '.', '_' and '-', starting with a letter or digit. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private final TableLocation root;
    private final TableSettings settings;
    private final MeterRegistry meters;
    private final int maxTables;
    private final ObjectStore rootStore;
    private final Map<String, RolloutTable> open = new ConcurrentHashMap<>();
    private final BufferAllocator landingAllocator = new RootAllocator();
    /** Names known to exist (listed or created), for the cap; refreshed by {@link #names}. */
    private final Set<String> known = ConcurrentHashMap.newKeySet();
    /** One lance-core cache and one merge capacity for every table (null for one table, which has its own). */
    private final SharedByTables shared;

    private final ResidentBudget budget;

    private TableCatalog(TableLocation root, TableSettings settings, MeterRegistry meters, int maxTables) {
        this.root = root;
        this.settings = settings;
        this.meters = meters;
        this.maxTables = maxTables;
        this.rootStore = root == null ? null : ObjectStores.open(root);
        this.shared = root == null
                ? null
                : new SharedByTables(
                        new SharedLanceCache(settings.readCacheBytes()),
                        new MergeCapacity(
                                settings.mergeThreads(),
                                settings.mergeTablesParallel(),
                                Duration.ofMillis(settings.mergeThreadsIdleStopMs())));
        Duration idleRelease = root == null ? Duration.ZERO : Duration.ofMillis(settings.tablesIdleReleaseMs());
        this.budget = root == null
                ? null
                : new ResidentBudget(
                        () -> Map.copyOf(open),
                        settings.tablesMemoryBudgetBytes(),
                        idleRelease,
                        ResidentBudget.checkInterval(idleRelease),
                        meters);
    }

    /** A one-table deployment: {@code table}, named {@link #SINGLE}; the catalog closes it. */
    public static TableCatalog single(RolloutTable table) {
        TableCatalog catalog = new TableCatalog(null, null, null, 1);
        catalog.open.put(SINGLE, table);
        catalog.known.add(SINGLE);
        return catalog;
    }

    /** Every table under {@code root}, at most {@code maxTables} of them. */
    public static TableCatalog under(TableLocation root, TableSettings settings, MeterRegistry meters, int maxTables) {
        if (maxTables < 1) {
            throw new IllegalArgumentException("maxTables must be at least 1, was " + maxTables);
        }
        TableCatalog catalog = new TableCatalog(root, settings, meters, maxTables);
        catalog.names(); // the existing tables count towards the cap from the start
        return catalog;
    }

    public boolean isSingle() {
        return root == null;
    }

    /**
     * The key of a table's shard: of its GenerationSealed events (so it picks the partition of the sealed topic, and
     * with it the merge-worker instance) and of the merge-worker's stores. The shard alone for one table, as it always
     * was; table and shard under a root, so merge-worker instances share a root's tables out, not only its input
     * partitions (keyed by shard, 100 tables fed by 4 partitions had 4 keys: at most 4 instances, and the hash of 4
     * keys split them unevenly).
     */
    public String shardKey(String table, String shard) {
        return isSingle() ? shard : table + "/" + shard;
    }

    /** The root URI, or the single table's URI. */
    public String uri() {
        return isSingle() ? open.get(SINGLE).location().uri() : root.uri();
    }

    /** Why {@code name} cannot name a table, or null when it can. */
    public static String nameProblem(String name) {
        if (name == null || name.isEmpty()) {
            return "the table name is empty";
        }
        if (!NAME.matcher(name).matches()) {
            return "table name '" + name + "' is not one path segment of letters, digits, '.', '_' or '-' (at most 128,"
                    + " starting with a letter or digit)";
        }
        return null;
    }

    /** The table of a one-table deployment; fails for a catalog of many. */
    public RolloutTable only() {
        if (!isSingle()) {
            throw new IllegalStateException("this deployment serves many tables under " + root + ": name one");
        }
        return open.get(SINGLE);
    }

    /** Where table {@code name} lives. */
    public TableLocation locationOf(String name) {
        if (isSingle()) {
            requireSingleName(name);
            return open.get(SINGLE).location();
        }
        requireValid(name);
        return new TableLocation(root.resolve(name), root.storageOptions());
    }

    /**
     * The table, created (schema + MemWAL) when it does not exist yet. Fails with {@link RolloutTableException.TableCap}
     * when it would be one table more than the cap.
     */
    public RolloutTable createOrOpen(String name) {
        RolloutTable table = open.get(name);
        if (table != null) {
            return table;
        }
        if (isSingle()) {
            requireSingleName(name);
        }
        requireValid(name);
        synchronized (this) {
            table = open.get(name);
            if (table != null) {
                return table;
            }
            if (!known.contains(name) && known.size() >= maxTables) {
                names(); // another process may have made it meanwhile
                if (!known.contains(name) && known.size() >= maxTables) {
                    throw new RolloutTableException.TableCap(root.uri(), name, maxTables);
                }
            }
            table = RolloutTable.createOrOpen(locationOf(name), settings, meters, shared);
            known.add(name);
            open.put(name, table);
            return table;
        }
    }

    /** An existing table, opened on first use; empty when there is no table of that name. */
    public Optional<RolloutTable> open(String name) {
        RolloutTable table = open.get(name);
        if (table != null) {
            return Optional.of(table);
        }
        if (isSingle() || nameProblem(name) != null) {
            return Optional.empty();
        }
        synchronized (this) {
            table = open.get(name);
            if (table != null) {
                return Optional.of(table);
            }
            try {
                table = RolloutTable.open(locationOf(name), settings, meters, shared);
            } catch (RolloutTableException.NotARolloutTable e) {
                return Optional.empty();
            }
            known.add(name);
            open.put(name, table);
            return Optional.of(table);
        }
    }

    /** The table of {@code name}; fails with {@link RolloutTableException.NoSuchTable} when there is none. */
    public RolloutTable require(String name) {
        return open(name).orElseThrow(() -> new RolloutTableException.NoSuchTable(uri(), name));
    }

    /** The table an event's {@code table_uri} names, when it is this catalog's (a table under the root, or the one). */
    public Optional<String> nameOf(String tableUri) {
        if (tableUri == null) {
            return Optional.empty();
        }
        // The catalog's own options: a URI alone may not name its store's account (az://container/...).
        Map<String, String> options = isSingle() ? open.get(SINGLE).location().storageOptions() : root.storageOptions();
        String uri = new TableLocation(tableUri, options).uri();
        if (isSingle()) {
            return uri.equals(uri()) ? Optional.of(SINGLE) : Optional.empty();
        }
        String prefix = root.uri() + "/";
        if (!uri.startsWith(prefix)) {
            return Optional.empty();
        }
        String name = uri.substring(prefix.length());
        return nameProblem(name) == null ? Optional.of(name) : Optional.empty();
    }

    /** The names of the tables, sorted: one listing of the root (folders with a valid name). */
    public List<String> names() {
        if (isSingle()) {
            return List.of(SINGLE);
        }
        Set<String> names = new TreeSet<>();
        for (ObjectStore.Entry entry : rootStore.list("")) {
            if (entry.folder() && nameProblem(entry.name()) == null) {
                names.add(entry.name());
            }
        }
        names.addAll(open.keySet());
        known.addAll(names);
        return new ArrayList<>(names);
    }

    /**
     * The tables holding a seal of {@code shard} that starts at {@code firstOffset}: one listing of that shard's seals
     * per table and no table opened, since a partition's restart asks it of every table of the catalog.
     */
    public List<String> withSealStartingAt(String shard, long firstOffset) {
        ShardId.requireValid(shard);
        if (isSingle()) {
            return only().generations().startingAt(shard, firstOffset).isPresent() ? List.of(SINGLE) : List.of();
        }
        List<String> found = new ArrayList<>();
        for (String name : names()) {
            for (ObjectStore.Entry entry : rootStore.list(name + "/" + SealedGeneration.SEALS_DIR + "/" + shard)) {
                GenerationCatalog.Listed seal = entry.folder() ? null : GenerationCatalog.parse(shard, entry.name());
                if (seal != null && seal.firstOffset() == firstOffset) {
                    found.add(name);
                    break;
                }
            }
        }
        return found;
    }

    /**
     * A batch of no table: a row decoded there before its table is known (a route by a field) moves on to its table's
     * batch ({@link GenerationBatch#moveStagedTo}). The caller closes it.
     */
    public GenerationBatch newLandingBatch() {
        return new GenerationBatch(landingAllocator, name -> null);
    }

    /** The tables opened so far, by name. */
    public Map<String, RolloutTable> opened() {
        return Map.copyOf(open);
    }

    public int maxTables() {
        return maxTables;
    }

    /** Runs the resident memory check now (it also runs on its own); returns the tables released. */
    public int releaseIdleTables() {
        return budget == null ? 0 : budget.check();
    }

    private static void requireValid(String name) {
        String problem = nameProblem(name);
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
    }

    private static void requireSingleName(String name) {
        if (!SINGLE.equals(name)) {
            throw new IllegalArgumentException(
                    "this deployment serves one table (" + SINGLE + "), not '" + name + "'; many tables need a root");
        }
    }

    @Override
    public void close() {
        if (budget != null) {
            budget.close();
        }
        open.values().forEach(RolloutTable::close);
        open.clear();
        if (shared != null) {
            shared.close();
        }
        if (rootStore != null) {
            rootStore.close();
        }
        try {
            landingAllocator.close();
        } catch (IllegalStateException leaked) {
            // a landing batch still held by a write that outlived its task: its memory goes with the process
        }
    }
}
