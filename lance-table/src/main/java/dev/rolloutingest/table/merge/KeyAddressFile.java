package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.function.BooleanSupplier;
import java.util.function.ToLongFunction;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Where every key of the base sat when the base was last read whole: a file on the merge-worker's local disk of
 * (hash, second hash, row address) entries sorted by hash (unsigned), 24 bytes a base row, read through a mapping of
 * the file, with the first hash of every block of 128 entries kept in memory (1/16 byte a row) to find the 3 KiB block
 * a key's entry sits in. {@link KeyAddresses} asks it for the keys its book of the newest keys does not hold, so an
 * update of a random old key costs a block read instead of a lookup in the record_id index. Its addresses are hints
 * like the book's, and it holds what trusting one unread needs: each fragment's deletion state and order bounds
 * ({@link FragmentBounds}) as the build read them.
 *
 * <p>Built from one version of the base: its record_ids and order columns with row addresses, bucketed by the hash's
 * top bits into files of at most {@code bucketBytes} each, each bucket then sorted in memory and appended. So a build
 * holds one bucket in memory, whatever the table's size. The file names the highest fragment id it covers and the
 * rows it holds, from which {@link KeyAddresses} tells when it has grown stale.
 */
final class KeyAddressFile implements AutoCloseable {
    static final String SUFFIX = ".addresses";
    private static final long MAGIC = 0x524B_4144_4452_0003L; // "RKADDR" and the format's version
    /** A multiple of an entry's bytes: entries never cross a mapped segment's end. */
    private static final int HEADER_BYTES = 48;

    static final int BLOCK_ENTRIES = 128;
    static final int ENTRY_BYTES = 24;
    /** Entries are read through mappings of the file of this many entries each (a mapping holds at most 2 GiB). */
    private static final int SEGMENT_ENTRIES = 1 << 25;

    private final Path path;
    private final FileChannel channel;
    /** The file mapped, in segments of 768 MiB: a read of an entry is a memory read, from the page cache when cold. */
    private final MappedByteBuffer[] segments;

    private final long segmentBytes;

    private final long entries;
    private final long version;
    private final int maxFragmentId;
    /** The first hash of every block. */
    private final long[] blockFirst;
    /** Each fragment's order bounds and deletion state when the build read it. */
    private final Map<Integer, FragmentBounds> bounds;

    private final Map<Integer, FragmentBounds.DeletionState> deletions;
    private final long fragmentBytes;

    private KeyAddressFile(
            Path path,
            FileChannel channel,
            MappedByteBuffer[] segments,
            long segmentBytes,
            long[] header,
            long[] first,
            Map<Integer, FragmentBounds> bounds,
            Map<Integer, FragmentBounds.DeletionState> deletions) {
        this.path = path;
        this.channel = channel;
        this.segments = segments;
        this.segmentBytes = segmentBytes;
        this.entries = header[0];
        this.version = header[1];
        this.maxFragmentId = (int) header[2];
        this.fragmentBytes = header[3];
        this.blockFirst = first;
        this.bounds = bounds;
        this.deletions = deletions;
    }

    /** Opens a file this class wrote; a file of another format or cut short fails with an IOException. */
    static KeyAddressFile open(Path path) throws IOException {
        return open(path, SEGMENT_ENTRIES);
    }

    /** @param segmentEntries mappings of this many entries each (tests map many small ones) */
    static KeyAddressFile open(Path path, int segmentEntries) throws IOException {
        FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
        try {
            ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
            readFully(channel, header, 0);
            header.flip();
            if (header.getLong() != MAGIC) {
                throw new IOException("not a key address file: " + path);
            }
            long entries = header.getLong();
            long version = header.getLong();
            long maxFragmentId = header.getLong();
            long blocks = header.getLong();
            long fragmentBytes = header.getLong();
            if (entries < 0 || blocks != blocksOf(entries) || blocks > Integer.MAX_VALUE || fragmentBytes < 0) {
                throw new IOException("a key address file with a broken header: " + path);
            }
            long expected = bytesOf(entries, fragmentBytes);
            if (channel.size() != expected) {
                throw new IOException("a key address file cut short: " + path + " (" + channel.size() + " of "
                        + expected + " bytes)");
            }
            ByteBuffer index = ByteBuffer.allocate((int) blocks * 8);
            readFully(channel, index, HEADER_BYTES + entries * ENTRY_BYTES);
            index.flip();
            long[] first = new long[(int) blocks];
            index.asLongBuffer().get(first);
            if (fragmentBytes > Integer.MAX_VALUE) {
                throw new IOException("a key address file with a broken header: " + path);
            }
            ByteBuffer fragments = ByteBuffer.allocate((int) fragmentBytes);
            readFully(channel, fragments, HEADER_BYTES + entries * ENTRY_BYTES + blocks * 8);
            fragments.flip();
            Map<Integer, FragmentBounds> bounds = new HashMap<>();
            Map<Integer, FragmentBounds.DeletionState> deletions = new HashMap<>();
            readFragments(fragments, bounds, deletions);
            long size = channel.size();
            long segmentBytes = (long) segmentEntries * ENTRY_BYTES;
            MappedByteBuffer[] segments = new MappedByteBuffer[(int) ((size - 1) / segmentBytes + 1)];
            for (int k = 0; k < segments.length; k++) {
                long from = k * segmentBytes;
                segments[k] = channel.map(FileChannel.MapMode.READ_ONLY, from, Math.min(size - from, segmentBytes));
            }
            return new KeyAddressFile(
                    path,
                    channel,
                    segments,
                    segmentBytes,
                    new long[] {entries, version, maxFragmentId, fragmentBytes},
                    first,
                    bounds,
                    deletions);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /**
     * Each fragment: its id, first data file, deletion state, then its bounds' partitions with their offset and ingest
     * time.
     */
    private static void readFragments(
            ByteBuffer in, Map<Integer, FragmentBounds> bounds, Map<Integer, FragmentBounds.DeletionState> deletions)
            throws IOException {
        try {
            while (in.hasRemaining()) {
                int id = in.getInt();
                int fileBytes = in.getInt();
                if (fileBytes < 0 || fileBytes > in.remaining()) {
                    throw new IOException("a key address file with broken fragment bounds");
                }
                byte[] dataFile = new byte[fileBytes];
                in.get(dataFile);
                boolean any = in.get() != 0;
                FragmentBounds.DeletionState state = new FragmentBounds.DeletionState(
                        new String(dataFile, java.nio.charset.StandardCharsets.UTF_8),
                        any,
                        any ? in.getLong() : 0,
                        any ? in.getLong() : 0);
                int partitions = in.getInt();
                if (partitions < 0 || partitions > in.remaining() / 20) {
                    throw new IOException("a key address file with broken fragment bounds");
                }
                FragmentBounds.Builder builder = new FragmentBounds.Builder();
                for (int p = 0; p < partitions; p++) {
                    builder.add(in.getInt(), in.getLong(), in.getLong());
                }
                bounds.put(id, builder.build());
                deletions.put(id, state);
            }
        } catch (java.nio.BufferUnderflowException e) {
            throw new IOException("a key address file with broken fragment bounds", e);
        }
    }

    private static long blocksOf(long entries) {
        return (entries + BLOCK_ENTRIES - 1) / BLOCK_ENTRIES;
    }

    /** The entry of a hash, or -1. */
    long find(long hash) {
        int b = lastBlockAtOrBelow(hash);
        if (b < 0) {
            return -1;
        }
        long lo = (long) b * BLOCK_ENTRIES;
        long hi = Math.min(entries, lo + BLOCK_ENTRIES) - 1;
        while (lo <= hi) {
            long mid = (lo + hi) >>> 1;
            int c = Long.compareUnsigned(longAt(HEADER_BYTES + mid * ENTRY_BYTES), hash);
            if (c == 0) {
                return mid;
            } else if (c < 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return -1;
    }

    /** The second hash of the key at an entry. */
    long check(long entry) {
        return longAt(HEADER_BYTES + entry * ENTRY_BYTES + 8);
    }

    /** The row address at an entry. */
    long address(long entry) {
        return longAt(HEADER_BYTES + entry * ENTRY_BYTES + 16);
    }

    /** The address the file holds for a hash, or -1. */
    long get(long hash) {
        long entry = find(hash);
        return entry < 0 ? -1 : address(entry);
    }

    /** A fragment's order bounds when the build read it; null for a fragment it did not read. */
    FragmentBounds bounds(int fragment) {
        return bounds.get(fragment);
    }

    /** Each fragment's deletion state when the build read it. */
    Map<Integer, FragmentBounds.DeletionState> deletions() {
        return deletions;
    }

    private long longAt(long offset) {
        int segment = (int) (offset / segmentBytes);
        return segments[segment].getLong((int) (offset - segment * segmentBytes));
    }

    private int lastBlockAtOrBelow(long hash) {
        int lo = 0;
        int hi = blockFirst.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(blockFirst[mid], hash) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }

    long entries() {
        return entries;
    }

    /** The base version it was built from. */
    long version() {
        return version;
    }

    /** The highest fragment id it covers: rows in fragments above it are not in the file. */
    int maxFragmentId() {
        return maxFragmentId;
    }

    /**
     * Its memory: the blocks' first hashes and the fragments' bounds (the mapped entries are the page cache's, which
     * the system reclaims).
     */
    long memoryBytes() {
        return blockFirst.length * 8L + fragmentBytes * 3;
    }

    long fileBytes() {
        return bytesOf(entries, fragmentBytes);
    }

    /** A whole file's size: the header, the entries, the blocks' first hashes, the fragments. */
    private static long bytesOf(long entries, long fragmentBytes) {
        return HEADER_BYTES + entries * ENTRY_BYTES + blocksOf(entries) * 8 + fragmentBytes;
    }

    /** What a file of this many base rows takes on disk, about: its entries. */
    static long bytesFor(long rows) {
        return rows * ENTRY_BYTES;
    }

    Path path() {
        return path;
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // a read-only file: nothing was left unwritten
        }
    }

    /**
     * Writes the file of {@code base}'s keys into {@code folder} ({@code <version>.addresses}, written under a
     * temporary name and renamed whole) and opens it.
     *
     * @param bucketBytes the most entries' bytes a bucket holds in memory while it is sorted
     */
    static KeyAddressFile build(
            Dataset base,
            List<Fragment> fragments,
            Path folder,
            long bucketBytes,
            ToLongFunction<KeyFilter.Hash> hashOfKey)
            throws IOException {
        return build(base, fragments, folder, bucketBytes, hashOfKey, () -> false);
    }

    /** @param cancelled asked between batches: a build stops (CancellationException) once it says so */
    static KeyAddressFile build(
            Dataset base,
            List<Fragment> fragments,
            Path folder,
            long bucketBytes,
            ToLongFunction<KeyFilter.Hash> hashOfKey,
            BooleanSupplier cancelled)
            throws IOException {
        long rows = 0;
        int maxFragmentId = -1;
        List<Integer> ids = new ArrayList<>();
        for (Fragment fragment : fragments) {
            rows += fragment.metadata().getPhysicalRows();
            maxFragmentId = Math.max(maxFragmentId, fragment.getId());
            ids.add(fragment.getId());
        }
        int bits = 0;
        while (bits < 10 && (rows * ENTRY_BYTES >> bits) > bucketBytes) {
            bits++;
        }
        Files.createDirectories(folder);
        Path work = Files.createTempDirectory(folder, "build-");
        try {
            FragmentBounds.PerFragment bounds = new FragmentBounds.PerFragment();
            long entries = writeBuckets(base, ids, work, bits, hashOfKey, bounds, cancelled);
            Path written = work.resolve("whole");
            byte[] fragmentSection = fragmentSection(fragments, bounds);
            writeSorted(work, bits, entries, new long[] {base.version(), maxFragmentId}, fragmentSection, written);
            Path target = folder.resolve(base.version() + SUFFIX);
            Files.move(written, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return open(target);
        } finally {
            deleteTree(work);
        }
    }

    private static long writeBuckets(
            Dataset base,
            List<Integer> ids,
            Path work,
            int bits,
            ToLongFunction<KeyFilter.Hash> hash,
            FragmentBounds.PerFragment bounds,
            BooleanSupplier cancelled)
            throws IOException {
        int buckets = 1 << bits;
        int buffer = Math.max(4096, (1 << 20) / buckets);
        DataOutputStream[] out = new DataOutputStream[buckets];
        long entries = 0;
        try {
            for (int b = 0; b < buckets; b++) {
                out[b] = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(bucket(work, b)), buffer));
            }
            ScanOptions options = new ScanOptions.Builder()
                    .columns(MergeJoin.COLUMNS)
                    .withRowAddress(true)
                    .fragmentIds(ids)
                    .batchSize(65_536)
                    .build();
            try (LanceScanner scanner = base.newScan(options);
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    if (cancelled.getAsBoolean()) {
                        throw new CancellationException("the build of a key address file was cancelled");
                    }
                    VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                    VarCharVector keys = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                    MergeJoin.BaseRowColumns columns = MergeJoin.BaseRowColumns.of(batch);
                    for (int i = 0; i < batch.getRowCount(); i++) {
                        KeyFilter.Hash keyHash = KeyFilter.murmur3x64(keys.get(i));
                        long h = hash.applyAsLong(keyHash);
                        long address = columns.addresses().get(i);
                        DataOutputStream to = out[bits == 0 ? 0 : (int) (h >>> (64 - bits))];
                        to.writeLong(h);
                        to.writeLong(keyHash.h2());
                        to.writeLong(address);
                        bounds.add(address, columns.partition(i), columns.offset(i), columns.ingestedMicros(i));
                    }
                    entries += batch.getRowCount();
                }
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw LanceIo.unchecked(e);
            }
        } finally {
            for (DataOutputStream o : out) {
                if (o != null) {
                    o.close();
                }
            }
        }
        return entries;
    }

    /** The fragments the build read rows of: id, deletion state, bounds ({@link #readFragments} reads it back). */
    private static byte[] fragmentSection(List<Fragment> fragments, FragmentBounds.PerFragment read)
            throws IOException {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            for (Fragment fragment : fragments) {
                FragmentBounds bounds = read.of(fragment.getId());
                if (bounds == null) {
                    continue; // no live row: no entry points there
                }
                FragmentBounds.DeletionState state = FragmentBounds.DeletionState.of(fragment.metadata());
                out.writeInt(fragment.getId());
                byte[] dataFile = state.dataFile().getBytes(java.nio.charset.StandardCharsets.UTF_8);
                out.writeInt(dataFile.length);
                out.write(dataFile);
                out.writeByte(state.any() ? 1 : 0);
                if (state.any()) {
                    out.writeLong(state.id());
                    out.writeLong(state.readVersion());
                }
                out.writeInt(bounds.partitions().length);
                for (int p = 0; p < bounds.partitions().length; p++) {
                    out.writeInt(bounds.partitions()[p]);
                    out.writeLong(bounds.maxOffsets()[p]);
                    out.writeLong(bounds.maxIngestedMicros()[p]);
                }
            }
        }
        return bytes.toByteArray();
    }

    /** @param at the base version read and the highest fragment id covered */
    private static void writeSorted(Path work, int bits, long entries, long[] at, byte[] fragments, Path to)
            throws IOException {
        long blocks = blocksOf(entries);
        long[] first = new long[(int) blocks];
        try (DataOutputStream out =
                new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(to), 1 << 16))) {
            out.writeLong(MAGIC);
            out.writeLong(entries);
            out.writeLong(at[0]);
            out.writeLong(at[1]);
            out.writeLong(blocks);
            out.writeLong(fragments.length);
            long written = 0;
            for (int b = 0; b < 1 << bits; b++) {
                Path file = bucket(work, b);
                int n = (int) (Files.size(file) / ENTRY_BYTES);
                long[] hashes = new long[n];
                long[] checks = new long[n];
                long[] addresses = new long[n];
                try (DataInputStream in =
                        new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
                    for (int i = 0; i < n; i++) {
                        hashes[i] = in.readLong();
                        checks[i] = in.readLong();
                        addresses[i] = in.readLong();
                    }
                }
                Files.delete(file);
                sortByHash(hashes, checks, addresses, 0, n - 1);
                for (int i = 0; i < n; i++, written++) {
                    if (written % BLOCK_ENTRIES == 0) {
                        first[(int) (written / BLOCK_ENTRIES)] = hashes[i];
                    }
                    out.writeLong(hashes[i]);
                    out.writeLong(checks[i]);
                    out.writeLong(addresses[i]);
                }
            }
            for (long f : first) {
                out.writeLong(f);
            }
            out.write(fragments);
        }
    }

    private static Path bucket(Path work, int b) {
        return work.resolve("bucket-" + b);
    }

    /** Quicksort of the entries by hash, unsigned; recursion on the smaller side, so the stack stays shallow. */
    static void sortByHash(long[] hashes, long[] checks, long[] addresses, int lo, int hi) {
        while (hi - lo > 16) {
            int mid = (lo + hi) >>> 1;
            long pivot = median(hashes[lo], hashes[mid], hashes[hi]);
            int i = lo;
            int j = hi;
            while (i <= j) {
                while (Long.compareUnsigned(hashes[i], pivot) < 0) {
                    i++;
                }
                while (Long.compareUnsigned(hashes[j], pivot) > 0) {
                    j--;
                }
                if (i <= j) {
                    swap(hashes, checks, addresses, i++, j--);
                }
            }
            if (j - lo < hi - i) {
                sortByHash(hashes, checks, addresses, lo, j);
                lo = i;
            } else {
                sortByHash(hashes, checks, addresses, i, hi);
                hi = j;
            }
        }
        for (int i = lo + 1; i <= hi; i++) {
            for (int k = i; k > lo && Long.compareUnsigned(hashes[k - 1], hashes[k]) > 0; k--) {
                swap(hashes, checks, addresses, k - 1, k);
            }
        }
    }

    private static long median(long a, long b, long c) {
        if (Long.compareUnsigned(a, b) > 0) {
            long t = a;
            a = b;
            b = t;
        }
        if (Long.compareUnsigned(b, c) > 0) {
            b = c;
        }
        return Long.compareUnsigned(a, b) > 0 ? a : b;
    }

    private static void swap(long[] hashes, long[] checks, long[] addresses, int i, int j) {
        swap(hashes, i, j);
        swap(checks, i, j);
        swap(addresses, i, j);
    }

    private static void swap(long[] values, int i, int j) {
        long v = values[i];
        values[i] = values[j];
        values[j] = v;
    }

    private static void readFully(FileChannel channel, ByteBuffer into, long position) throws IOException {
        while (into.hasRemaining()) {
            int n = channel.read(into, position + into.position());
            if (n < 0) {
                throw new IOException("unexpected end of a key address file");
            }
        }
    }

    /** The newest complete file in a folder, or null (files that do not open are deleted). */
    static KeyAddressFile newest(Path folder) {
        if (!Files.isDirectory(folder)) {
            return null;
        }
        List<Path> files = new ArrayList<>();
        try (var listed = Files.list(folder)) {
            listed.filter(p -> p.getFileName().toString().endsWith(SUFFIX)).forEach(files::add);
        } catch (IOException e) {
            return null;
        }
        files.sort(Comparator.comparingLong(KeyAddressFile::versionOf).reversed());
        for (Path file : files) {
            try {
                return open(file);
            } catch (IOException e) {
                deleteQuietly(file);
            }
        }
        return null;
    }

    private static long versionOf(Path file) {
        String name = file.getFileName().toString();
        try {
            return Long.parseLong(name.substring(0, name.length() - SUFFIX.length()));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Deletes the folder's other files (older builds) and builds a crash left an hour ago or more; a build under way
     * in another committer of the table on this machine is younger.
     */
    void deleteOthers() {
        long hourAgo = System.currentTimeMillis() - 3_600_000L;
        try (var listed = Files.list(path.getParent())) {
            listed.filter(p -> !p.equals(path))
                    .filter(p -> p.getFileName().toString().endsWith(SUFFIX) || modifiedBefore(p, hourAgo))
                    .forEach(KeyAddressFile::deleteTree);
        } catch (IOException e) {
            // left for the next build
        }
    }

    private static boolean modifiedBefore(Path p, long millis) {
        try {
            return Files.getLastModifiedTime(p).toMillis() < millis;
        } catch (IOException e) {
            return false;
        }
    }

    static void deleteTree(Path root) {
        try (var walk = Files.walk(root)) {
            walk.sorted(Comparator.reverseOrder()).forEach(KeyAddressFile::deleteQuietly);
        } catch (IOException e) {
            // gone already
        }
    }

    private static void deleteQuietly(Path p) {
        try {
            Files.deleteIfExists(p);
        } catch (IOException e) {
            // left for the next build
        }
    }
}
