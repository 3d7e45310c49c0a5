package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.storage.FencedCommit;
import dev.rolloutingest.table.storage.LanceIo;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The merge committer's Bloom filter of the record_ids the base holds: a key it rules out is certainly new to
 * the base and can be appended without a lookup; a key it may hold is looked up exactly ({@link MergeJoin}). It
 * never has a false negative, because it is never trusted beyond what it has seen:
 *
 * <ul>
 *   <li>built from the base's record_id column the first time a commit needs it (memory: ~1.8 bytes per key of
 *       its capacity, twice the base's rows and at least a million);
 *   <li>before every commit brought up to the base's latest version by reading the record_ids of the fragments
 *       it has not seen (what merges, compactions or other committers added since), which Lance numbers above
 *       every earlier fragment;
 *   <li>grown by a layer twice the size of the last when more keys went in than it was sized for ({@link Layers});
 *   <li>rebuilt when the base went back: a fragment appears that it has neither seen nor can have missed by that
 *       rule, a seen fragment id holds other files, or a seen fragment has fewer deleted rows (a restore of an old
 *       version, or any rollback).
 * </ul>
 *
 * Keys leave the base only when old deletes are dropped; a key left in the filter costs a lookup, never a duplicate.
 *
 * <p>Over 300 lines because the filter's build, load, layering and exact check share its layers' state.
 */
public final class BaseKeys {
    private static final Logger log = LoggerFactory.getLogger(BaseKeys.class);
    public static final long MIN_CAPACITY = 1_000_000;
    private final LanceIo lance;
    private final long minCapacity;
    private final Timer builds;
    private final Timer catchUps;
    private final Counter keysRead;
    private final Counter probes;
    private Layers filter;
    private long capacity;
    private long added;
    private long version = -1;
    /** Fragment ids this filter has read (or that were added with their keys); ids only grow in Lance. */
    private final BitSet seen = new BitSet();
    /**
     * What each seen fragment looked like at the last catch-up: its first data file and its deleted rows. In one line
     * of versions a fragment keeps its files and only gains deletions; a fragment of a seen id with other files (its id
     * used again after a restore) or fewer deletions (a restore undid a delete) means the base went back.
     */
    private final Map<Integer, Print> prints = new HashMap<>();
    /**
     * The highest fragment id a build or catch-up listed. A fragment below it that was never seen means the base went
     * back; ids this committer appended do not count (a commit of another's numbered just below one of them, while
     * ours waited, is new, not old).
     */
    private int highestRead = -1;

    private record Print(String firstFile, long deletions) {
        static Print of(FragmentMetadata fragment) {
            String first = FencedCommit.firstPath(fragment);
            return new Print(first, fragment.getNumDeletions());
        }

        boolean wentBackFrom(Print before) {
            return !firstFile.equals(before.firstFile) || deletions < before.deletions;
        }
    }

    public BaseKeys(LanceIo lance, MeterRegistry meters) {
        this(lance, meters, MIN_CAPACITY);
    }

    /** @param minCapacity keys the first layer holds at least (tests make it small to see layers added) */
    BaseKeys(LanceIo lance, MeterRegistry meters, long minCapacity) {
        this.minCapacity = minCapacity;
        this.lance = lance;
        this.builds = Timer.builder("rollout.merge.key.filter.load")
                .tag("kind", "build")
                .description("Time to build the merge committer's filter of base keys from the record_id column"
                        + " (kind=build) or to bring it up to the base's latest version (kind=catch-up)")
                .register(meters);
        this.catchUps = Timer.builder("rollout.merge.key.filter.load")
                .tag("kind", "catch-up")
                .description("Time to build the merge committer's filter of base keys from the record_id column"
                        + " (kind=build) or to bring it up to the base's latest version (kind=catch-up)")
                .register(meters);
        this.keysRead = Counter.builder("rollout.merge.key.filter.keys.read")
                .description("Base record_ids read into the merge committer's key filter (builds and catch-ups)")
                .register(meters);
        this.probes = Counter.builder("rollout.merge.key.filter.probes")
                .description("Keys of merge rounds looked up in the merge committer's key filters (a key the book of"
                        + " the newest keys' addresses holds is not)")
                .register(meters);
        SummedGauges.add(
                meters,
                "rollout.merge.key.filter.bytes",
                "Memory of the merge committers' filters of base keys, over every table",
                this,
                BaseKeys::sizeBytes);
    }

    /**
     * Makes the filter hold every key of {@code base} (opened at the version the commit reads). It never forgets:
     * a base older than what the filter has seen (another thread's commit was newer) leaves it as it is, a
     * superset of that base's keys.
     */
    public synchronized void catchUp(Dataset base) {
        catchUp(base, base.getFragments());
    }

    /** {@link #catchUp(Dataset)} with the base's fragments listed once by the caller. */
    public synchronized void catchUp(Dataset base, List<Fragment> fragments) {
        long started = System.nanoTime();
        if (filter == null) {
            build(base, fragments, started);
            return;
        }
        if (base.version() < version) {
            return; // an older base (a commit that opened it before another's): the filter holds more than it
        }
        if (unseenOld(fragments)
                || wentBack(fragments)
                || filter.layers() > 3 && added > 4 * Math.max(minCapacity, base.countRows())) {
            // a restore or any rollback; or compactions and rewrites took the same keys in again and again
            build(base, fragments, started);
            return;
        }
        List<Integer> unseen = new ArrayList<>();
        for (Fragment fragment : fragments) {
            if (!seen.get(fragment.getId())) {
                unseen.add(fragment.getId());
            }
        }
        if (unseen.isEmpty()) {
            return;
        }
        long read = readKeys(base, unseen);
        unseen.forEach(seen::set);
        for (Fragment fragment : fragments) {
            prints.putIfAbsent(fragment.getId(), Print.of(fragment.metadata()));
            highestRead = Math.max(highestRead, fragment.getId());
        }
        version = Math.max(version, base.version());
        catchUps.record(Duration.ofNanos(System.nanoTime() - started));
        log.debug("Table {}: key filter took in {} keys of {} new fragments", lance.location(), read, unseen.size());
    }

    /**
     * A seen fragment whose files differ or whose deletions fell since the last catch-up: the base went back (a
     * restore undid deletes, or a fragment id was used again). Records the others as they are now.
     */
    private boolean wentBack(List<Fragment> fragments) {
        for (Fragment fragment : fragments) {
            if (!seen.get(fragment.getId())) {
                continue;
            }
            Print now = Print.of(fragment.metadata());
            Print before = prints.put(fragment.getId(), now);
            if (before != null && now.wentBackFrom(before)) {
                log.info(
                        "Table {}: fragment {} went back ({} -> {}): the key filter is built again",
                        lance.location(),
                        fragment.getId(),
                        before,
                        now);
                return true;
            }
        }
        return false;
    }

    /** A fragment below the highest seen that this filter never read: the base went back (a restore). */
    private boolean unseenOld(List<Fragment> fragments) {
        for (Fragment fragment : fragments) {
            if (fragment.getId() < highestRead && !seen.get(fragment.getId())) {
                return true;
            }
        }
        return false;
    }

    private void build(Dataset base, List<Fragment> fragments, long started) {
        long rows = base.countRows();
        long newCapacity = Math.max(minCapacity, rows * 2);
        Layers previous = filter;
        filter = new Layers(newCapacity);
        capacity = newCapacity;
        added = 0;
        seen.clear();
        prints.clear();
        try {
            readKeys(base, null);
        } catch (RuntimeException e) {
            filter = null; // never trust a half-read filter
            throw e;
        }
        prints.clear();
        highestRead = -1;
        fragments.forEach(f -> {
            seen.set(f.getId());
            prints.put(f.getId(), Print.of(f.metadata()));
            highestRead = Math.max(highestRead, f.getId());
        });
        version = base.version();
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        builds.record(took);
        log.info(
                "Table {}: {} the merge key filter from {} base keys at version {} in {} ms ({} MiB, capacity {} keys)",
                lance.location(),
                previous == null ? "built" : "rebuilt",
                added,
                version,
                took.toMillis(),
                filter.sizeBytes() >> 20,
                capacity);
    }

    /**
     * Bloom filters added as keys outgrow them, each twice the size of the last: taking in more keys than the base
     * had when the filter was built never stops a commit for a rebuild (one took 6.5 s at 7M keys on a loaded
     * machine). A lookup asks every layer; the false-positive rate is at most the layers' sum (0.1 % each: a
     * filter built on an empty base and grown to 16M keys has 5 layers, <= 0.5 %).
     */
    private static final class Layers {
        private final List<KeyFilter> filters = new ArrayList<>();
        private long lastCapacity;
        private long lastCount;

        Layers(long capacity) {
            addLayer(capacity);
        }

        private void addLayer(long capacity) {
            filters.add(KeyFilter.withCapacity(capacity));
            lastCapacity = capacity;
            lastCount = 0;
        }

        void add(KeyFilter.Hash key) {
            if (lastCount >= lastCapacity) {
                addLayer(lastCapacity * 2);
            }
            filters.get(filters.size() - 1).add(key);
            lastCount++;
        }

        boolean mightContain(KeyFilter.Hash key) {
            for (KeyFilter layer : filters) {
                if (layer.mightContain(key)) {
                    return true;
                }
            }
            return false;
        }

        public long sizeBytes() {
            return filters.stream().mapToLong(KeyFilter::sizeBytes).sum();
        }

        int layers() {
            return filters.size();
        }
    }

    /** Reads the record_ids of the fragments (all when null) into the filter; returns how many. */
    private long readKeys(Dataset base, List<Integer> fragmentIds) {
        long read = KeyFilter.forEachKey(base, fragmentIds, filter::add);
        added += read;
        keysRead.increment(read);
        return read;
    }

    /** False only when every base this filter caught up to certainly lacks the key. */
    synchronized boolean mightHold(KeyFilter.Hash key) {
        probes.increment();
        return filter == null || filter.mightContain(key);
    }

    /** Keys this committer just appended, in these new fragments (as committed): seen, no catch-up reads them. */
    synchronized void appended(Collection<FragmentMetadata> fragments, Collection<KeyFilter.Hash> keys) {
        if (filter == null) {
            return;
        }
        keys.forEach(filter::add);
        added += keys.size();
        for (FragmentMetadata fragment : fragments) {
            seen.set(fragment.getId());
            // its print too: a later fragment under this id (after a restore) must not pass as read
            prints.put(fragment.getId(), Print.of(fragment));
        }
    }

    /** Above every fragment id this filter has seen: where a new fragment of the committer's may start. */
    synchronized int firstUnseenId() {
        return seen.length();
    }

    /**
     * Drops the filter (an idle table's memory); the next commit builds it again from the base. Safe at any time: a
     * commit between its catch-up and its checks finds no filter and looks every key up.
     */
    public synchronized void release() {
        filter = null;
        capacity = 0;
        added = 0;
        version = -1;
        seen.clear();
        prints.clear();
        highestRead = -1;
    }

    public synchronized long sizeBytes() {
        return filter == null ? 0 : filter.sizeBytes();
    }

    synchronized int layers() {
        return filter == null ? 0 : filter.layers();
    }
}
