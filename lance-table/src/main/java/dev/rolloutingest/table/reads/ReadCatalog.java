package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.generations.PendingShard;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.rows.BaseDeletes;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.lance.Dataset;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What readers see, kept in memory and refreshed at most every {@code refresh} (or at once after this
 * process changed the table): one open handle of the base at a version, its merged watermarks, and each
 * shard's pending generations with their key filters. A read therefore costs no listing, no manifest read
 * and no seal read; refreshing costs one recursive LIST of the seals, then a check of the base's latest version,
 * and one GET per seal not seen before (seals are immutable, so their filters are kept until merged).
 *
 * <p>Staleness: a generation sealed by another process becomes readable at most {@code refresh} after its
 * seal exists (never before: the seal is the commit point); a merge committed elsewhere is seen within the
 * same bound, and until then readers keep the older base with the generations it had not merged, which GC
 * keeps for its grace period. Every snapshot is consistent: base version and pending list belong together.
 *
 * <p>Over 300 lines because the snapshot, its refresh and the release of what it keeps change under one lock, so a
 * reader never pairs a base version with another version's pending list.
 */
public final class ReadCatalog implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ReadCatalog.class);

    /** A pending generation as readers know it, with when and from where it was sealed (for the backlog). */
    record Pending(GenerationCatalog.Listed listed, KeyFilter filter, Sealed sealed) {}

    /** What a seal says besides its key filter: when it was sealed and from which input partition. */
    private record Sealed(long atMs, String topic, int partition) {
        static final Sealed UNREADABLE = new Sealed(0, null, -1);
    }

    /**
     * One open handle of the base at one version, with the deletes kept beside it (null: none) opened after it, so
     * every delete that version applied is in them or still pending; shared by every snapshot of that version.
     */
    private static final class BaseHandle {
        final Dataset dataset;
        final Dataset deletes;
        private final AtomicInteger users = new AtomicInteger(1);
        /** The deletes' record_ids as a filter, read by the first read that asks (null until then). */
        private volatile KeyFilter deletedKeys;

        BaseHandle(Dataset dataset, Dataset deletes) {
            this.dataset = dataset;
            this.deletes = deletes;
        }

        /** Whether the deletes beside the base may hold the key: false for most keys, without a scan of them. */
        boolean mayBeDeleted(KeyFilter.Hash key) {
            if (deletes == null) {
                return false;
            }
            KeyFilter filter = deletedKeys;
            if (filter == null) {
                synchronized (this) {
                    filter = deletedKeys;
                    if (filter == null) {
                        deletedKeys = filter = keysOf(deletes);
                    }
                }
            }
            return filter.mightContain(key);
        }

        long deletedKeysBytes() {
            KeyFilter filter = deletedKeys;
            return filter == null ? 0 : filter.sizeBytes();
        }

        private static KeyFilter keysOf(Dataset deletes) {
            KeyFilter filter = KeyFilter.withCapacity(Math.max(1_024, deletes.countRows()));
            KeyFilter.forEachKey(deletes, null, filter::add);
            return filter;
        }

        BaseHandle retain() {
            users.incrementAndGet();
            return this;
        }

        void release() {
            if (users.decrementAndGet() == 0) {
                dataset.close();
                if (deletes != null) {
                    deletes.close();
                }
            }
        }
    }

    /** A consistent view: base handle, watermarks, pending generations per shard (ascending). Close to release. */
    static final class Snapshot implements AutoCloseable {
        private final BaseHandle handle;
        final Dataset base;
        /** The deletes kept beside the base ({@link BaseDeletes}), read after it; null when there are none. */
        final Dataset deletes;

        final long version;
        final Map<String, Long> watermarks;
        final Map<String, List<Pending>> pendingByShard;
        final long takenAtNanos;
        private final AtomicInteger users = new AtomicInteger(1); // the catalog's own reference
        /** The pending keys merged from every pending generation: by the first bulk read of the snapshot. */
        private volatile PendingKeys pendingKeys;

        private Snapshot(
                BaseHandle handle,
                long version,
                Map<String, Long> watermarks,
                Map<String, List<Pending>> pendingByShard) {
            this.handle = handle;
            this.base = handle.dataset;
            this.deletes = handle.deletes;
            this.version = version;
            this.watermarks = watermarks;
            this.pendingByShard = pendingByShard;
            this.takenAtNanos = System.nanoTime();
        }

        /** The snapshot's pending keys, merged by {@code merge} once; every later read of the snapshot reuses them. */
        PendingKeys pendingKeys(java.util.function.Supplier<PendingKeys> merge) {
            PendingKeys keys = pendingKeys;
            if (keys == null) {
                synchronized (this) {
                    keys = pendingKeys;
                    if (keys == null) {
                        pendingKeys = keys = merge.get();
                    }
                }
            }
            return keys;
        }

        /** Whether the deletes beside the base may hold the key ({@link BaseHandle#mayBeDeleted}). */
        boolean mayBeDeleted(KeyFilter.Hash key) {
            return handle.mayBeDeleted(key);
        }

        /** Bytes of the merged pending keys, once a read merged them. */
        long pendingKeysBytes() {
            PendingKeys keys = pendingKeys;
            return keys == null ? 0 : keys.bytes();
        }

        private boolean retain() {
            for (int n = users.get(); n > 0; n = users.get()) {
                if (users.compareAndSet(n, n + 1)) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void close() {
            if (users.decrementAndGet() == 0) {
                handle.release();
            }
        }
    }

    private final LanceIo lance;
    private final GenerationCatalog catalog;
    private final long refreshNanos;
    private final ReentrantLock refreshing = new ReentrantLock();
    private final Map<String, KeyFilterEntry> filters = new ConcurrentHashMap<>();
    private volatile Snapshot current;
    private volatile boolean stale = true;

    /** A seal's filter as loaded; {@code filter} null = the seal has none (or could not be read). */
    private record KeyFilterEntry(KeyFilter filter, Sealed sealed) {}

    private final DatasetHandles generations;

    /**
     * @param openGenerations the most pending generation datasets kept open
     * @param generationKeysBytes the most memory kept with them (record_id positions, rows' keys and orders)
     */
    public ReadCatalog(
            LanceIo lance, GenerationCatalog catalog, Duration refresh, int openGenerations, long generationKeysBytes) {
        this(lance, catalog, refresh, openGenerations, generationKeysBytes, 0);
    }

    /** @param generationColumnsBytes the most memory of whole columns kept with them for scans and tails (0 = none) */
    public ReadCatalog(
            LanceIo lance,
            GenerationCatalog catalog,
            Duration refresh,
            int openGenerations,
            long generationKeysBytes,
            long generationColumnsBytes) {
        this.lance = lance;
        this.catalog = catalog;
        this.refreshNanos = refresh.toNanos();
        this.generations = new DatasetHandles(
                openGenerations, generationKeysBytes, generationColumnsBytes, lance.allocator(), lance::openGeneration);
    }

    /** An open handle of a pending generation (kept for the next lookup); close the lease when done. */
    DatasetHandles.Lease generation(GenerationCatalog.Listed listed) {
        return generations.lease(lance.location().resolve(listed.datasetPath()));
    }

    /** The current snapshot, refreshed first when older than the bound; the caller closes it. */
    Snapshot acquire() {
        while (true) {
            Snapshot snapshot = current;
            boolean due = stale || snapshot == null || System.nanoTime() - snapshot.takenAtNanos >= refreshNanos;
            if (due) {
                // One reader refreshes; the others go on with the snapshot they have unless there is none.
                if (snapshot == null || stale) {
                    refreshing.lock();
                } else if (!refreshing.tryLock()) {
                    if (snapshot.retain()) {
                        return snapshot;
                    }
                    continue;
                }
                try {
                    snapshot = current;
                    if (stale || snapshot == null || System.nanoTime() - snapshot.takenAtNanos >= refreshNanos) {
                        refresh();
                    }
                } catch (RolloutTableException e) {
                    throw e;
                } catch (Exception e) {
                    // lance-core throws IOException undeclared; the store cannot be read: the caller may retry.
                    throw new RolloutTableException.Unavailable(
                            lance.location().uri(), "refreshing the read catalog", e);
                } finally {
                    refreshing.unlock();
                }
                snapshot = current;
            }
            if (snapshot != null && snapshot.retain()) { // null or closed: released meanwhile, refresh again
                return snapshot;
            }
        }
    }

    /**
     * Every shard's backlog (the shards with a watermark or a seal), from the current snapshot: as fresh as reads are
     * ({@code rollout.read.refresh.ms}, and at once after this process's own commits).
     */
    public Map<String, PendingShard> backlog() {
        try (Snapshot snapshot = acquire()) {
            Map<String, PendingShard> backlog = new TreeMap<>();
            snapshot.pendingByShard.forEach((shard, pending) -> {
                Sealed oldest =
                        pending.isEmpty() ? Sealed.UNREADABLE : pending.get(0).sealed();
                backlog.put(
                        shard,
                        new PendingShard(
                                shard,
                                snapshot.watermarks.getOrDefault(shard, 0L),
                                pending.stream()
                                        .map(p -> p.listed().generation())
                                        .toList(),
                                pending.stream()
                                        .mapToLong(p -> p.sealed().atMs())
                                        .min()
                                        .orElse(0),
                                oldest.topic(),
                                oldest.partition()));
            });
            return backlog;
        }
    }

    /** This process changed the table (sealed, merged, compacted): the next read refreshes first. */
    public void invalidate() {
        stale = true;
    }

    private void refresh() {
        stale = false; // a change during this refresh sets it again
        // The seals are listed before the base version is read: a generation merged after the listing is in that
        // base (watermarks only grow), and GC deletes only merged ones, so none falls between the two however long
        // this takes. Read the other way round, a merge and a GC between the two steps lose the generation.
        Map<String, List<GenerationCatalog.Listed>> sealed = catalog.sealedByShard();
        Snapshot previous = current;
        BaseHandle handle;
        long version;
        if (previous != null
                && previous.base.latestVersion() == previous.version
                && (previous.deletes == null || previous.deletes.latestVersion() == previous.deletes.version())) {
            // unchanged: keep the handle, its caches stay warm. The deletes beside the base change alone too (their
            // drop, their compaction), after which GC may remove the files an older version of them reads
            handle = previous.handle.retain();
            version = previous.version;
        } else {
            Dataset opened = lance.openBase();
            Dataset deletes;
            try {
                deletes = BaseDeletes.open(lance); // after the base: a delete it applied is kept, or still pending
            } catch (RuntimeException e) {
                opened.close();
                throw e;
            }
            handle = new BaseHandle(opened, deletes);
            version = opened.version();
        }
        Snapshot next;
        try {
            Map<String, Long> watermarks = previous != null && previous.version == version
                    ? previous.watermarks
                    : MemWalWatermarks.read(handle.dataset);
            next = new Snapshot(handle, version, watermarks, pending(sealed, watermarks));
        } catch (RuntimeException e) {
            handle.release();
            stale = true;
            throw e;
        }
        current = next;
        if (previous != null) {
            previous.close();
        }
    }

    private Map<String, List<Pending>> pending(
            Map<String, List<GenerationCatalog.Listed>> sealedByShard, Map<String, Long> watermarks) {
        Map<String, List<GenerationCatalog.Listed>> sealed = new TreeMap<>(sealedByShard);
        // Shards merged and garbage-collected to nothing have no seal left but still count: 0 pending.
        watermarks.keySet().forEach(shard -> sealed.putIfAbsent(shard, List.of()));
        Map<String, List<Pending>> byShard = new TreeMap<>();
        Map<String, KeyFilterEntry> seen = new HashMap<>();
        for (Map.Entry<String, List<GenerationCatalog.Listed>> shard : sealed.entrySet()) {
            long watermark = watermarks.getOrDefault(shard.getKey(), 0L);
            List<Pending> pending = new ArrayList<>();
            for (GenerationCatalog.Listed listed : shard.getValue()) {
                if (Long.compareUnsigned(listed.generation(), watermark) <= 0) {
                    continue; // in the base already
                }
                KeyFilterEntry entry = filters.computeIfAbsent(listed.sealPath(), path -> loadFilter(listed));
                seen.put(listed.sealPath(), entry);
                pending.add(new Pending(listed, entry.filter(), entry.sealed()));
            }
            byShard.put(shard.getKey(), Collections.unmodifiableList(pending));
        }
        filters.keySet().retainAll(seen.keySet()); // merged generations' filters are not needed any more
        Set<String> live = new HashSet<>();
        byShard.values()
                .forEach(list -> list.forEach(
                        p -> live.add(lance.location().resolve(p.listed().datasetPath()))));
        generations.retainOnly(live);
        return Collections.unmodifiableMap(byShard);
    }

    private KeyFilterEntry loadFilter(GenerationCatalog.Listed listed) {
        try {
            SealedGeneration seal = catalog.seal(listed);
            return new KeyFilterEntry(
                    seal.keyFilter(), new Sealed(seal.sealedAt().toEpochMilli(), seal.topic(), seal.partition()));
        } catch (RolloutTableException e) {
            // Unreadable seal: no filter, so lookups open the generation and report it if it is broken too.
            log.warn(
                    "Table {} shard {} generation {}: seal unreadable ({}); lookups will open the generation",
                    lance.location(),
                    listed.shard(),
                    listed.generation(),
                    e.getMessage());
            return new KeyFilterEntry(null, Sealed.UNREADABLE);
        }
    }

    /** Bytes of pending generations' whole columns kept for scans and tails (part of {@link #residentBytes}). */
    long columnBytes() {
        return generations.columnBytes();
    }

    /**
     * Memory this catalog keeps between reads: the pending seals' key filters, the generations' key positions, rows'
     * keys and orders and whole columns, and the current snapshot's merged pending keys.
     */
    public long residentBytes() {
        long bytes = generations.keptBytes();
        Snapshot snapshot = current;
        if (snapshot != null) {
            bytes += snapshot.pendingKeysBytes() + snapshot.handle.deletedKeysBytes();
        }
        for (KeyFilterEntry entry : filters.values()) {
            bytes += entry.filter() == null ? 0 : entry.filter().sizeBytes();
        }
        return bytes;
    }

    /**
     * Lets go of what the catalog keeps between reads (an idle table's memory): the snapshot with its base handle, the
     * key filters, the open generations. Reads in flight keep what they hold; the next read builds it all again.
     */
    public void release() {
        refreshing.lock();
        try {
            Snapshot released = current;
            current = null;
            stale = true;
            if (released != null) {
                released.close();
            }
            filters.clear();
            generations.clear();
        } finally {
            refreshing.unlock();
        }
    }

    @Override
    public void close() {
        refreshing.lock();
        try {
            if (current != null) {
                current.close();
                current = null;
            }
            generations.close();
        } finally {
            refreshing.unlock();
        }
    }
}
