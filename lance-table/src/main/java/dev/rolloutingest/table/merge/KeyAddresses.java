package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the base's newest keys sit: a key's hash to its row address, so a merge commit finds the base rows its updates
 * replace without a lookup per key in the record_id index. Rollouts are updated soon after they land (scored, judged,
 * re-sent), so the rows an update replaces sit in the newest fragments, and those are what this book holds.
 *
 * <p>An address is a hint, never trusted on its own. {@link #find} replaces the row at a hinted address unread only
 * when the slot's second hash is the key's too, the row is live as far as the book's read of its fragment and this
 * committer's own commits since tell ({@link RowLiveness}: anyone else's commit to the fragment, a delete, a restore,
 * another committer, leaves a deletion file the book does not know), and the round's row is newer than every row of
 * the fragment ({@link FragmentBounds}). Otherwise it takes the rows at the hinted addresses from the very version the
 * commit checks against (the rows of fragments it reads into the book on the way, the newest, it has already), and a
 * key counts as found only when the live row there holds it. lance-core does not return a deleted row, and a row
 * moved by a compaction or an address used again after a restore holds another key or none; such a key, and every
 * key without a hint, goes through the exact join ({@link MergeJoin}). A stale address costs a lookup, never a wrong
 * row.
 *
 * <p>Filled lazily, when a commit has more keys to look up than the key filter's false positives explain (so a table
 * that only ever gains new keys never pays for it): of the fragments it has not read, the newest that its capacity
 * holds are read, oldest first (record_ids with their row addresses); the others (older ones, or one larger than
 * what is left, as a compaction's output) are passed over for good. The fragments this committer appends are read
 * the same way at its next lookup. (lance-core numbers a new fragment above every id it gave out, a restore's too;
 * were an id used again, a row found there would hold another key or one that is that key's only row.) Memory
 * ({@code rollout.merge.key.addresses.bytes}): two tables of hash, second hash and address, 24 bytes a slot, each at
 * most 3/4 full, in 7/8 of it (the rest holds the addresses this committer deleted at); when the younger is full the
 * older is dropped, so the book holds between one and two tables' worth of the newest keys.
 *
 * <p>Keys it does not hold are asked of a {@link KeyAddressFile} of every base key's address on local disk (1/16 byte
 * a base row of memory), built in the background once a commit leaves more keys to the join than the false positives
 * explain (updates of old keys), and again when it has grown stale or drifted ({@link KeyAddressFileKeeper}). It
 * outlives a restart. Its hints are replaced unread or taken by the same
 * rules as the book's, with the fragments' deletion states and bounds as its build read them.
 */
public final class KeyAddresses {
    static final String ROW_ADDRESS = "_rowaddr";
    private static final int FIRST_SLOTS = 4_096;
    /** A slot's hash, second hash and address. */
    private static final int BYTES_PER_SLOT = 24;
    /** A fragment read: its bounds (one partition, usually) and its deletion state as read. */
    private static final long BYTES_PER_FRAGMENT = 256;
    /** At most 1/this of a round's rows looking held is what the key filter's false positives explain. */
    private static final int LIKELY_FALSE_POSITIVES = 200;

    private static final Logger log = LoggerFactory.getLogger(KeyAddresses.class);

    private final ToLongFunction<KeyFilter.Hash> slotHash;
    private final int maxSlots;
    /** The table's file of every key's address; null: none. */
    private final KeyAddressFileKeeper files;

    private final Counter fileHints;
    private final Counter found;
    private final Counter stale;
    private final Counter absent;
    private final Counter keysRead;
    private final Counter keysAdopted;
    private final Counter taken;
    private final Timer finds;
    private final Counter trusted;
    private Slots young;
    /** The second hash of the slot {@link #get} found last. */
    private long lastCheck;

    private Slots old;
    /** Fragments read or passed over. */
    private final Set<Integer> known = new HashSet<>();
    /**
     * The highest fragment id a catch-up read or passed over since the book was last let go of; -1: none. Fragments
     * taken in at this committer's commits ({@link #adopted}) do not count: fragments numbered below them (the same
     * commit's written ones, others' commits before it) are read after them.
     */
    private int highestKnown = -1;
    /** The order bounds of the fragments read, by id. */
    private final Map<Integer, FragmentBounds> bounds = new HashMap<>();

    private final RowLiveness liveness;
    /** The tables' and the file's memory, kept for {@link #sizeBytes}. */
    private volatile long bytes;

    private volatile long onDisk;

    /** @param maxBytes the book's memory at most; 0 turns it off (every key through the join) */
    public KeyAddresses(MeterRegistry meters, long maxBytes) {
        this(meters, maxBytes, KeyAddresses::slotHash, null, 0, null);
    }

    /**
     * With a file of every base key's address beside the book.
     *
     * @param fileFolder the table's own folder of such files (kept across restarts)
     * @param fileMaxBytes no file for a base whose file would be larger; 0 = no file
     * @param openBase the base at its latest version, for a build in the background
     */
    public KeyAddresses(
            MeterRegistry meters, long maxBytes, Path fileFolder, long fileMaxBytes, Supplier<Dataset> openBase) {
        this(meters, maxBytes, KeyAddresses::slotHash, fileFolder, fileMaxBytes, openBase);
    }

    /** @param slotHash a key's hash in the book and the file (tests make keys share one) */
    KeyAddresses(
            MeterRegistry meters,
            long maxBytes,
            ToLongFunction<KeyFilter.Hash> slotHash,
            Path fileFolder,
            long fileMaxBytes,
            Supplier<Dataset> openBase) {
        this.slotHash = slotHash;
        this.files = maxBytes == 0 || fileMaxBytes == 0 || fileFolder == null
                ? null
                : new KeyAddressFileKeeper(
                        this,
                        meters,
                        fileFolder,
                        fileMaxBytes,
                        Math.max(1L << 20, maxBytes / 2),
                        slotHash,
                        openBase,
                        this::sawFile);
        long slots = Math.max(0, maxBytes / 16 * 7 / BYTES_PER_SLOT);
        this.maxSlots = slots < FIRST_SLOTS ? 0 : (int) Math.min(slots, 1 << 30);
        // the addresses this committer deleted at and its commits' transitions, in an eighth of the memory
        this.liveness = new RowLiveness(maxBytes / 8);
        String lookups = "rollout.merge.key.addresses.lookups";
        String description = "Keys a merge commit looked for in its book of the newest keys' row addresses: found (the"
                + " live row at the address holds the key), stale (it does not: a lookup through the join) or absent";
        this.found = Counter.builder(lookups)
                .tag("result", "found")
                .description(description)
                .register(meters);
        this.stale = Counter.builder(lookups)
                .tag("result", "stale")
                .description(description)
                .register(meters);
        this.absent = Counter.builder(lookups)
                .tag("result", "absent")
                .description(description)
                .register(meters);
        this.finds = Timer.builder("rollout.merge.key.addresses.find")
                .description("Time a merge commit spent finding base rows through the book of the newest keys'"
                        + " addresses: reading the fragments it had not read, taking the rows at the addresses")
                .register(meters);
        this.trusted = Counter.builder("rollout.merge.key.addresses.rows.trusted")
                .description("Base rows a merge commit replaced at the address the book gave without reading them:"
                        + " the same key's hashes, its fragment's deletions as the book saw them or changed by this"
                        + " committer's own commits only (never at that row), the round's row newer than every row"
                        + " of the fragment")
                .register(meters);
        this.taken = Counter.builder("rollout.merge.key.addresses.rows.taken")
                .description("Base rows taken at the addresses the merge committer's book gave, to confirm them (rows"
                        + " the book read in the same commit need none)")
                .register(meters);
        this.keysRead = Counter.builder("rollout.merge.key.addresses.keys.read")
                .description("Base record_ids read with their row addresses into the merge committer's book")
                .register(meters);
        this.keysAdopted = Counter.builder("rollout.merge.key.addresses.keys.adopted")
                .description("Base record_ids the merge committer's book took in with their row addresses at the"
                        + " commit that adopted their generation whole, without a read")
                .register(meters);
        this.fileHints = Counter.builder("rollout.merge.key.addresses.file.hints")
                .description("Addresses of keys the book of the newest keys did not hold, given by the file of every"
                        + " base key's address (each then confirmed by the take like the book's)")
                .register(meters);
        SummedGauges.add(
                meters,
                "rollout.merge.key.addresses.file.bytes",
                "Local disk of the merge committers' files of every base key's address, over every table",
                this,
                KeyAddresses::fileBytes);
        SummedGauges.add(
                meters,
                "rollout.merge.key.addresses.bytes",
                "Memory of the merge committers' books of the newest keys' row addresses, over every table",
                this,
                KeyAddresses::sizeBytes);
    }

    /**
     * What {@link #find} found: base rows by key (read, with their order), the addresses of live base rows that the
     * round's row of their key replaces (known without a read), and the keys it left to the join.
     */
    record Found(Map<String, List<MergeJoin.BaseRow>> rows, Map<String, Long> replaced, List<String> missed) {}

    /**
     * The base rows of the keys that this book places and {@code base} confirms; every other key is missed. Brings
     * the book up to {@code base} first.
     *
     * @param exact keys whose base rows must be read to be compared (a key with a delete kept beside the base): never
     *     among the replaced
     */
    synchronized Found find(
            Dataset base,
            List<Fragment> fragments,
            Collection<MergeSource.Row> keys,
            int roundRows,
            Set<String> exact) {
        // a few keys of a round the key filter could not rule out are its false positives (0.1-0.5 %): not worth
        // filling the book for, on a table that may only ever gain new keys
        boolean likelyFalsePositives = keys.size() <= roundRows / LIKELY_FALSE_POSITIVES;
        if (maxSlots == 0 || keys.isEmpty() || young == null && likelyFalsePositives) {
            return new Found(
                    Map.of(),
                    Map.of(),
                    keys.stream().map(MergeSource.Row::keyString).toList());
        }
        long started = System.nanoTime();
        try {
            return placed(base, fragments, keys, roundRows, exact);
        } finally {
            finds.record(Duration.ofNanos(System.nanoTime() - started));
        }
    }

    private Found placed(
            Dataset base,
            List<Fragment> fragments,
            Collection<MergeSource.Row> keys,
            int roundRows,
            Set<String> exact) {
        Map<Long, List<MergeSource.Row>> wanted = new HashMap<>();
        for (MergeSource.Row row : keys) {
            wanted.computeIfAbsent(slotHash.applyAsLong(row.hash()), h -> new ArrayList<>(1))
                    .add(row);
        }
        // the keys' rows among those the catch-up reads are live in this very version: no take for them
        Map<String, List<MergeJoin.BaseRow>> confirmed = new HashMap<>(catchUp(base, fragments, wanted));
        Map<Integer, Fragment> byId = new HashMap<>();
        fragments.forEach(f -> byId.put(f.getId(), f));
        Map<Integer, Long> rowsById = new HashMap<>(); // of the fragments hinted at only: a metadata read each
        // the fragments' states now, each built once a commit rather than once a key
        Map<Integer, FragmentBounds.DeletionState> statesById = new HashMap<>();
        Map<String, Long> hinted = new HashMap<>();
        Map<String, Long> replaced = new HashMap<>();
        List<String> missed = new ArrayList<>();
        int fileTrusted = 0;
        int fileRead = 0;
        KeyAddressFile everyKey = files == null ? null : files.file();
        for (MergeSource.Row row : keys) {
            String key = row.keyString();
            if (confirmed.containsKey(key)) {
                continue;
            }
            long hash = slotHash.applyAsLong(row.hash());
            long address = get(hash);
            RowLiveness.Source source = RowLiveness.Source.BOOK;
            if (address < 0 && everyKey != null) {
                long entry = everyKey.find(hash);
                if (entry >= 0) {
                    address = everyKey.address(entry);
                    lastCheck = everyKey.check(entry);
                    source = RowLiveness.Source.FILE;
                    fileHints.increment();
                }
            }
            Fragment fragment = address < 0 ? null : byId.get((int) (address >>> 32));
            Long rows = fragment == null
                    ? null
                    : rowsById.computeIfAbsent(
                            fragment.getId(), id -> fragment.metadata().getPhysicalRows());
            // an address beyond its fragment's rows, or in a fragment gone from this version, is not asked for
            if (rows != null && (address & 0xFFFF_FFFFL) < rows) {
                boolean unread = !exact.contains(key)
                        && replacedUnread(
                                row,
                                address,
                                fragment.getId(),
                                statesById.computeIfAbsent(
                                        fragment.getId(), id -> FragmentBounds.DeletionState.of(fragment.metadata())),
                                source);
                if (unread) {
                    replaced.put(key, address);
                } else {
                    hinted.put(key, address);
                }
                if (source == RowLiveness.Source.FILE) {
                    fileTrusted += unread ? 1 : 0;
                    fileRead += unread ? 0 : 1;
                }
            } else {
                missed.add(key);
                (address < 0 ? absent : stale).increment();
            }
        }
        if (!hinted.isEmpty()) {
            confirmed.putAll(take(base, hinted));
        }
        hinted.keySet().forEach(key -> {
            if (!confirmed.containsKey(key)) {
                missed.add(key);
                stale.increment();
            }
        });
        found.increment(confirmed.size() + replaced.size());
        trusted.increment(replaced.size());
        // more keys left to the join than the key filter's false positives explain: updates of old keys; or more of
        // the file's rows read than trusted: others changed its fragments (or this committer before a restart)
        boolean drifted = fileRead > fileTrusted && fileRead > roundRows / LIKELY_FALSE_POSITIVES;
        if (files != null && (missed.size() > roundRows / LIKELY_FALSE_POSITIVES || drifted)) {
            files.buildIfDue(fragments, drifted);
        }
        return new Found(confirmed, replaced, missed);
    }

    /**
     * Whether the round's row replaces the live row of its key at the address without a read of the row: the slot's
     * second hash is the key's too (two keys sharing both 64-bit hashes is as likely as two UUIDs colliding), the row
     * is live as far as the source and this committer's own commits since know ({@link RowLiveness}), and the round's
     * row is newer than every row of the fragment ({@link FragmentBounds}: a replay of older offsets is read).
     */
    private boolean replacedUnread(
            MergeSource.Row row,
            long address,
            int fragment,
            FragmentBounds.DeletionState now,
            RowLiveness.Source source) {
        FragmentBounds fragmentBounds = source == RowLiveness.Source.BOOK
                ? bounds.get(fragment)
                : files.current().bounds(fragment);
        return lastCheck == row.hash().h2()
                && fragmentBounds != null
                && liveness.live(source, address, now)
                && fragmentBounds.olderThan(row.partition(), row.offset(), row.ingestedMicros());
    }

    /**
     * This committer's commit deleted {@code rows}: the fragments went from their state in {@code before} (the
     * version the commit was checked against) to {@code after} (a fragment left without rows is absent). Rows the book
     * saw live in them stay trusted, but for those.
     */
    synchronized void committed(List<Fragment> before, List<FragmentMetadata> after, Map<Integer, List<Integer>> rows) {
        if (rows.isEmpty()) {
            return;
        }
        Map<Integer, FragmentBounds.DeletionState> was = new HashMap<>();
        for (Fragment fragment : before) {
            if (rows.containsKey(fragment.getId())) {
                was.put(fragment.getId(), FragmentBounds.DeletionState.of(fragment.metadata()));
            }
        }
        Map<Integer, FragmentBounds.DeletionState> is = new HashMap<>();
        after.forEach(f -> is.put(f.getId(), FragmentBounds.DeletionState.of(f)));
        liveness.committed(was, is, rows);
        countBytes();
    }

    /**
     * This committer's commit took these generations in whole as base fragments ({@code committed}, in the same
     * order): a book in use holds their keys at once, without a read (the catch-up passes them over). A span whose
     * rows were not read in the fragment's order is left to the catch-up.
     */
    synchronized void adopted(
            List<MergeSource.Span> spans, List<MergeSource> sources, List<FragmentMetadata> committed) {
        if (young == null || spans.isEmpty()) {
            return; // not in use: it starts when updates come
        }
        FragmentBounds.PerFragment fragmentBounds = new FragmentBounds.PerFragment();
        for (int s = 0; s < spans.size(); s++) {
            MergeSource.Span span = spans.get(s);
            MergeSource source = sources.get(s);
            FragmentMetadata fragment = committed.get(s);
            if (!span.rowsInOrder() || fragment.getPhysicalRows() != span.rows() || known.contains(fragment.getId())) {
                continue;
            }
            long base = (long) fragment.getId() << 32;
            List<KeyFilter.Hash> hashes = source.hashes(span);
            for (int i = 0; i < span.rows(); i++) {
                int ordinal = span.first() + i;
                KeyFilter.Hash hash = hashes.get(i);
                put(slotHash.applyAsLong(hash), hash.h2(), base | i);
                fragmentBounds.add(
                        base | i, source.partition(ordinal), source.offset(ordinal), source.ingestedMicros(ordinal));
            }
            known.add(fragment.getId());
            sawRead(fragment, fragmentBounds);
            keysAdopted.increment(span.rows());
        }
        countBytes();
    }

    /** Reads the fragments of {@code base} it has not read, if it holds any keys yet (a book never filled stays so). */
    synchronized void catchUp(Dataset base, List<Fragment> fragments) {
        if (young != null) {
            catchUp(base, fragments, Map.of());
        }
    }

    /** A table's own folder of key address files: its last path segment and a hash of its whole URI. */
    public static String folderOf(TableLocation location) {
        String uri = location.uri();
        String name = uri.replaceAll("/+$", "");
        name = name.substring(name.lastIndexOf('/') + 1).replaceAll("[^A-Za-z0-9._-]", "_");
        try {
            byte[] digest =
                    java.security.MessageDigest.getInstance("SHA-256").digest(uri.getBytes(StandardCharsets.UTF_8));
            return name + "-" + java.util.HexFormat.of().formatHex(digest, 0, 8);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The file the keeper took up (null: none): its rows in the fragments its build saw are live while they stay so. */
    private void sawFile(KeyAddressFile taken) {
        liveness.forget(RowLiveness.Source.FILE);
        if (taken != null) {
            taken.deletions().forEach((id, state) -> liveness.saw(RowLiveness.Source.FILE, id, state));
        }
        countBytes();
    }

    /** The build of the file under way, or the last one. */
    public synchronized CompletableFuture<Void> fileBuild() {
        return files == null ? CompletableFuture.completedFuture(null) : files.building();
    }

    /** The live rows at the hinted addresses that hold the key they were asked for. */
    private Map<String, List<MergeJoin.BaseRow>> take(Dataset base, Map<String, Long> hinted) {
        long[] addresses = hinted.values().stream()
                .mapToLong(Long::longValue)
                .distinct()
                .sorted()
                .toArray();
        List<String> columns = new ArrayList<>(MergeJoin.COLUMNS);
        columns.add(ROW_ADDRESS);
        Map<String, List<MergeJoin.BaseRow>> confirmed = new HashMap<>();
        taken.increment(addresses.length);
        try (ArrowReader reader = base.takeRows(Arrays.stream(addresses).boxed().toList(), columns)) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                MergeJoin.BaseRowColumns rows = MergeJoin.BaseRowColumns.of(batch);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    String key = new String(ids.get(i), StandardCharsets.UTF_8);
                    MergeJoin.BaseRow row = rows.row(i);
                    Long asked = hinted.get(key);
                    if (asked != null && asked == row.address()) {
                        confirmed.put(key, List.of(row));
                    }
                }
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw LanceIo.unchecked(e);
        }
        return confirmed;
    }

    /**
     * Reads the fragments of {@code base} it has not read: the newest up to what the book holds, oldest first, so the
     * newest stay when the younger table rolls over; the older ones are passed over for good.
     */
    private Map<String, List<MergeJoin.BaseRow>> catchUp(
            Dataset base, List<Fragment> fragments, Map<Long, List<MergeSource.Row>> wanted) {
        Set<Integer> present = new HashSet<>();
        fragments.forEach(f -> present.add(f.getId()));
        known.retainAll(present); // fragments compacted or deleted away
        bounds.keySet().retainAll(present);
        liveness.retain(present);
        List<Fragment> unread = unread(fragments);
        if (unread.isEmpty()) {
            return Map.of();
        }
        // lance numbers a new fragment above every id it gave out: one at or below the highest the book looked at is
        // an id back after a restore (or used again), and slots of its earlier read may point at rows it no longer
        // holds live, so the book starts over
        if (unread.get(unread.size() - 1).getId() <= highestKnown) {
            log.info(
                    "Table {}: fragment ids the book of key addresses looked at are back (a restore): it reads them"
                            + " again",
                    files == null ? "-" : files.folderName());
            release();
            unread = unread(fragments);
        }
        long room = 2L * maxEntries(maxSlots);
        List<Integer> toRead = new ArrayList<>();
        for (Fragment fragment : unread) {
            long rows = fragment.metadata().getPhysicalRows();
            if (rows <= room) { // one that does not fit (a compaction's output, say) is passed over, not the rest
                toRead.add(fragment.getId());
                room -= rows;
            }
            known.add(fragment.getId());
            highestKnown = Math.max(highestKnown, fragment.getId());
        }
        if (toRead.isEmpty()) {
            return Map.of();
        }
        toRead.sort(Comparator.naturalOrder());
        Map<Integer, Fragment> byId = new HashMap<>();
        fragments.forEach(f -> byId.put(f.getId(), f));
        return read(base, toRead.stream().map(byId::get).toList(), wanted);
    }

    /** The fragments the book has not read or passed over, newest first. */
    private List<Fragment> unread(List<Fragment> fragments) {
        return fragments.stream()
                .filter(f -> !known.contains(f.getId()))
                .sorted(Comparator.comparingInt(Fragment::getId).reversed())
                .toList();
    }

    /**
     * Reads the fragments' keys into the book, with each fragment's order bounds and deletion state; returns the rows
     * of the wanted keys among them.
     */
    private Map<String, List<MergeJoin.BaseRow>> read(
            Dataset base, List<Fragment> fragments, Map<Long, List<MergeSource.Row>> wanted) {
        ScanOptions options = new ScanOptions.Builder()
                .columns(MergeJoin.COLUMNS)
                .withRowAddress(true)
                .fragmentIds(fragments.stream().map(Fragment::getId).toList())
                .batchSize(65_536)
                .build();
        Map<String, List<MergeJoin.BaseRow>> rows = new HashMap<>();
        FragmentBounds.PerFragment fragmentBounds = new FragmentBounds.PerFragment();
        long read = 0;
        try (LanceScanner scanner = base.newScan(options);
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                UInt8Vector addresses = (UInt8Vector) batch.getVector(ROW_ADDRESS);
                MergeJoin.BaseRowColumns columns = MergeJoin.BaseRowColumns.of(batch);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    byte[] id = ids.get(i);
                    KeyFilter.Hash keyHash = KeyFilter.murmur3x64(id);
                    long hash = slotHash.applyAsLong(keyHash);
                    long address = addresses.get(i);
                    put(hash, keyHash.h2(), address);
                    fragmentBounds.add(address, columns.partition(i), columns.offset(i), columns.ingestedMicros(i));
                    for (MergeSource.Row row : wanted.getOrDefault(hash, List.of())) {
                        if (Arrays.equals(row.key(), id)) {
                            rows.put(row.keyString(), List.of(columns.row(i)));
                        }
                    }
                }
                read += batch.getRowCount();
            }
        } catch (RuntimeException e) {
            release(); // never keep a half-read fragment as read
            throw e;
        } catch (Exception e) {
            release();
            throw LanceIo.unchecked(e);
        }
        keysRead.increment(read);
        for (Fragment fragment : fragments) {
            sawRead(fragment.metadata(), fragmentBounds);
        }
        countBytes();
        return rows;
    }

    /** A fragment whose keys the book now holds: its bounds and its state as read, its rows live while it stays so. */
    private void sawRead(FragmentMetadata fragment, FragmentBounds.PerFragment read) {
        FragmentBounds built = read.of(fragment.getId());
        if (built != null) { // a fragment with no live row has none to find
            bounds.put(fragment.getId(), built);
            liveness.saw(RowLiveness.Source.BOOK, fragment.getId(), FragmentBounds.DeletionState.of(fragment));
        }
    }

    /**
     * Whether the book holds an address for the key (a row of it was in the base; the address may be stale since).
     * Cheaper than the key filter's probes for a key the base holds: one slot looked at, not ten bits across the
     * filter.
     */
    synchronized boolean holds(KeyFilter.Hash hash) {
        return young != null && get(slotHash.applyAsLong(hash)) >= 0;
    }

    /** A key's hash in the book: never 0, which marks an empty slot. */
    private static long slotHash(KeyFilter.Hash hash) {
        return hash.h1() == 0 ? 1 : hash.h1();
    }

    /** The address of a hash, or -1; its second hash in {@link #lastCheck}. */
    private long get(long hash) {
        long address = get(young, hash);
        return address >= 0 ? address : get(old, hash);
    }

    private long get(Slots slots, long hash) {
        int at = slots == null ? -1 : slots.find(hash);
        if (at < 0) {
            return -1;
        }
        lastCheck = slots.checks[at];
        return slots.addresses[at];
    }

    private void put(long hash, long check, long address) {
        if (young == null) {
            young = new Slots(Math.min(FIRST_SLOTS, maxSlots));
            countBytes();
        }
        if (young.size >= maxEntries(young.hashes.length)) {
            if (young.hashes.length < maxSlots) {
                young = young.grown((int) Math.min(maxSlots, 2L * young.hashes.length));
            } else {
                Slots dropped = old;
                old = young;
                young = dropped != null ? dropped.cleared() : new Slots(maxSlots);
            }
            countBytes();
        }
        young.put(hash, check, address);
    }

    private void countBytes() {
        long slots = (young == null ? 0 : young.hashes.length) + (old == null ? 0 : old.hashes.length);
        bytes = slots * BYTES_PER_SLOT
                + bounds.size() * BYTES_PER_FRAGMENT
                + liveness.bytes()
                + (files == null ? 0 : files.memoryBytes());
        onDisk = files == null ? 0 : files.fileBytes();
    }

    private static long maxEntries(int slots) {
        return slots / 4L * 3;
    }

    /** Lets go of every address (an idle table's memory, or a base that went back); the next lookup reads again. */
    public synchronized void release() {
        young = null;
        old = null;
        known.clear();
        highestKnown = -1;
        bounds.clear();
        liveness.clear();
        if (files != null) {
            files.release();
        }
        countBytes();
    }

    /** Stops a build of the file under way (waiting for it to stop) and lets go of every address and the file. */
    public void close() {
        if (files != null) {
            files.close();
        }
        release();
    }

    /** Without the lock: a scrape of the gauge never waits for a commit's read of the book. */
    public long sizeBytes() {
        return bytes;
    }

    /** The file's bytes on disk, 0 without one. */
    public long fileBytes() {
        return onDisk;
    }

    /** Open addressing over any number of slots, linear probing; a hash put again takes the new address. */
    private static final class Slots {
        final long[] hashes;
        /** The keys' second hashes. */
        final long[] checks;

        final long[] addresses;
        int size;

        Slots(int slots) {
            hashes = new long[slots];
            checks = new long[slots];
            addresses = new long[slots];
        }

        /** The slot of a hash, or -1. */
        int find(long hash) {
            for (int i = index(hash); ; i = next(i)) {
                long at = hashes[i];
                if (at == hash) {
                    return i;
                }
                if (at == 0) {
                    return -1;
                }
            }
        }

        void put(long hash, long check, long address) {
            for (int i = index(hash); ; i = next(i)) {
                long at = hashes[i];
                if (at == 0) {
                    hashes[i] = hash;
                    size++;
                }
                if (at == 0 || at == hash) {
                    checks[i] = check;
                    addresses[i] = address;
                    return;
                }
            }
        }

        /** The hash's high half scaled to the slots: any count of slots, no power of two needed. */
        private int index(long hash) {
            return (int) (((hash >>> 32) * hashes.length) >>> 32);
        }

        private int next(int i) {
            return i + 1 == hashes.length ? 0 : i + 1;
        }

        Slots grown(int slots) {
            Slots bigger = new Slots(slots);
            for (int i = 0; i < hashes.length; i++) {
                if (hashes[i] != 0) {
                    bigger.put(hashes[i], checks[i], addresses[i]);
                }
            }
            return bigger;
        }

        Slots cleared() {
            Arrays.fill(hashes, 0);
            size = 0;
            return this;
        }
    }
}
