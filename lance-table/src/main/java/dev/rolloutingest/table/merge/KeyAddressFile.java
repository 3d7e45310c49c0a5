package dev.rolloutingest.table.merge;

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
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.function.BooleanSupplier;
import java.util.function.ToLongFunction;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Where every key of the base sat when the base was last read whole: a file on the merge-worker's local disk of
 * (hash, row address) pairs sorted by hash (unsigned), 16 bytes a base row, read through a mapping of the file, with
 * the first hash of every block of 256 pairs kept in memory (1/32 byte a row) to find the 4 KiB block, one page, a
 * key's pair sits in. {@link KeyAddresses} asks it
 * for the keys its book of the newest keys does not hold, so an update of a random old key costs a block read and a
 * take instead of a lookup in the record_id index. Its addresses are hints the take confirms, like the book's.
 *
 * <p>Built from one version of the base: its record_ids with row addresses, bucketed by the hash's top bits into
 * files of at most {@code bucketBytes} each, each bucket then sorted in memory and appended. So a build holds one
 * bucket in memory, whatever the table's size. The file names the highest fragment id it covers and the rows it
 * holds, from which {@link KeyAddresses} tells when it has grown stale.
 */
final class KeyAddressFile implements AutoCloseable {
    static final String SUFFIX = ".addresses";
    private static final long MAGIC = 0x524B_4144_4452_0001L; // "RKADDR" and the format's version
    /** A multiple of a pair's bytes: pairs never cross a mapped segment's end. */
    private static final int HEADER_BYTES = 48;
    /** Pairs are read through mappings of the file of 2^this bytes each (a mapping holds at most 2 GiB). */
    private static final int SEGMENT_SHIFT = 30;

    static final int BLOCK_PAIRS = 256;
    private static final int PAIR_BYTES = 16;

    private final Path path;
    private final FileChannel channel;
    /** The file mapped, in segments of 1 GiB: a read of a pair is a memory read, from the page cache when cold. */
    private final MappedByteBuffer[] segments;

    private final int segmentShift;

    private final long pairs;
    private final long version;
    private final int maxFragmentId;
    /** The first hash of every block. */
    private final long[] blockFirst;

    private KeyAddressFile(
            Path path,
            FileChannel channel,
            MappedByteBuffer[] segments,
            int segmentShift,
            long pairs,
            long version,
            int maxFragmentId,
            long[] first) {
        this.path = path;
        this.channel = channel;
        this.segments = segments;
        this.segmentShift = segmentShift;
        this.pairs = pairs;
        this.version = version;
        this.maxFragmentId = maxFragmentId;
        this.blockFirst = first;
    }

    /** Opens a file this class wrote; a file of another format or cut short fails with an IOException. */
    static KeyAddressFile open(Path path) throws IOException {
        return open(path, SEGMENT_SHIFT);
    }

    /** @param segmentShift mappings of 2^this bytes each, at least a pair's (tests map many small ones) */
    static KeyAddressFile open(Path path, int segmentShift) throws IOException {
        FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
        try {
            ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES);
            readFully(channel, header, 0);
            header.flip();
            if (header.getLong() != MAGIC) {
                throw new IOException("not a key address file: " + path);
            }
            long pairs = header.getLong();
            long version = header.getLong();
            int maxFragmentId = (int) header.getLong();
            long blocks = header.getLong();
            header.getLong(); // reserved
            if (pairs < 0 || blocks != blocksOf(pairs) || blocks > Integer.MAX_VALUE) {
                throw new IOException("a key address file with a broken header: " + path);
            }
            long expected = bytesOf(pairs);
            if (channel.size() != expected) {
                throw new IOException("a key address file cut short: " + path + " (" + channel.size() + " of "
                        + expected + " bytes)");
            }
            ByteBuffer index = ByteBuffer.allocate((int) blocks * 8);
            readFully(channel, index, HEADER_BYTES + pairs * PAIR_BYTES);
            index.flip();
            long[] first = new long[(int) blocks];
            index.asLongBuffer().get(first);
            long size = channel.size();
            MappedByteBuffer[] segments = new MappedByteBuffer[(int) ((size - 1 >> segmentShift) + 1)];
            for (int k = 0; k < segments.length; k++) {
                long from = (long) k << segmentShift;
                segments[k] =
                        channel.map(FileChannel.MapMode.READ_ONLY, from, Math.min(size - from, 1L << segmentShift));
            }
            return new KeyAddressFile(path, channel, segments, segmentShift, pairs, version, maxFragmentId, first);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static long blocksOf(long pairs) {
        return (pairs + BLOCK_PAIRS - 1) / BLOCK_PAIRS;
    }

    /** The address the file holds for a hash, or -1. */
    long get(long hash) {
        int b = lastBlockAtOrBelow(hash);
        if (b < 0) {
            return -1;
        }
        long lo = (long) b * BLOCK_PAIRS;
        long hi = Math.min(pairs, lo + BLOCK_PAIRS) - 1;
        while (lo <= hi) {
            long mid = (lo + hi) >>> 1;
            int c = Long.compareUnsigned(longAt(HEADER_BYTES + mid * PAIR_BYTES), hash);
            if (c == 0) {
                return longAt(HEADER_BYTES + mid * PAIR_BYTES + 8);
            } else if (c < 0) {
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return -1;
    }

    private long longAt(long offset) {
        return segments[(int) (offset >>> segmentShift)].getLong((int) (offset & ((1L << segmentShift) - 1)));
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

    long pairs() {
        return pairs;
    }

    /** The base version it was built from. */
    long version() {
        return version;
    }

    /** The highest fragment id it covers: rows in fragments above it are not in the file. */
    int maxFragmentId() {
        return maxFragmentId;
    }

    /** Its memory: the blocks' first hashes (the mapped pairs are the page cache's, which the system reclaims). */
    long memoryBytes() {
        return blockFirst.length * 8L;
    }

    long fileBytes() {
        return bytesOf(pairs);
    }

    /** A whole file's size: the header, the pairs, the blocks' first hashes. */
    private static long bytesOf(long pairs) {
        return HEADER_BYTES + pairs * PAIR_BYTES + blocksOf(pairs) * 8;
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
     * @param bucketBytes the most pairs' bytes a bucket holds in memory while it is sorted
     */
    static KeyAddressFile build(
            Dataset base, List<Fragment> fragments, Path folder, long bucketBytes, ToLongFunction<byte[]> hashOfKey)
            throws IOException {
        return build(base, fragments, folder, bucketBytes, hashOfKey, () -> false);
    }

    /** @param cancelled asked between batches: a build stops (CancellationException) once it says so */
    static KeyAddressFile build(
            Dataset base,
            List<Fragment> fragments,
            Path folder,
            long bucketBytes,
            ToLongFunction<byte[]> hashOfKey,
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
        while (bits < 10 && (rows * PAIR_BYTES >> bits) > bucketBytes) {
            bits++;
        }
        Files.createDirectories(folder);
        Path work = Files.createTempDirectory(folder, "build-");
        try {
            long pairs = writeBuckets(base, ids, work, bits, hashOfKey, cancelled);
            Path written = work.resolve("whole");
            writeSorted(work, bits, pairs, base.version(), maxFragmentId, written);
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
            ToLongFunction<byte[]> hash,
            BooleanSupplier cancelled)
            throws IOException {
        int buckets = 1 << bits;
        int buffer = Math.max(4096, (1 << 20) / buckets);
        DataOutputStream[] out = new DataOutputStream[buckets];
        long pairs = 0;
        try {
            for (int b = 0; b < buckets; b++) {
                out[b] = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(bucket(work, b)), buffer));
            }
            ScanOptions options = new ScanOptions.Builder()
                    .columns(List.of(RolloutSchema.RECORD_ID))
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
                    UInt8Vector addresses = (UInt8Vector) batch.getVector(KeyAddresses.ROW_ADDRESS);
                    for (int i = 0; i < batch.getRowCount(); i++) {
                        long h = hash.applyAsLong(keys.get(i));
                        DataOutputStream to = out[bits == 0 ? 0 : (int) (h >>> (64 - bits))];
                        to.writeLong(h);
                        to.writeLong(addresses.get(i));
                    }
                    pairs += batch.getRowCount();
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
        return pairs;
    }

    private static void writeSorted(Path work, int bits, long pairs, long version, int maxFragmentId, Path to)
            throws IOException {
        long blocks = blocksOf(pairs);
        long[] first = new long[(int) blocks];
        try (DataOutputStream out =
                new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(to), 1 << 16))) {
            out.writeLong(MAGIC);
            out.writeLong(pairs);
            out.writeLong(version);
            out.writeLong(maxFragmentId);
            out.writeLong(blocks);
            out.writeLong(0); // reserved: the pairs start 16-aligned
            long written = 0;
            for (int b = 0; b < 1 << bits; b++) {
                Path file = bucket(work, b);
                int n = (int) (Files.size(file) / PAIR_BYTES);
                long[] hashes = new long[n];
                long[] addresses = new long[n];
                try (DataInputStream in =
                        new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
                    for (int i = 0; i < n; i++) {
                        hashes[i] = in.readLong();
                        addresses[i] = in.readLong();
                    }
                }
                Files.delete(file);
                sortByHash(hashes, addresses, 0, n - 1);
                for (int i = 0; i < n; i++, written++) {
                    if (written % BLOCK_PAIRS == 0) {
                        first[(int) (written / BLOCK_PAIRS)] = hashes[i];
                    }
                    out.writeLong(hashes[i]);
                    out.writeLong(addresses[i]);
                }
            }
            for (long f : first) {
                out.writeLong(f);
            }
        }
    }

    private static Path bucket(Path work, int b) {
        return work.resolve("bucket-" + b);
    }

    /** Quicksort of the pairs by hash, unsigned; recursion on the smaller side, so the stack stays shallow. */
    static void sortByHash(long[] hashes, long[] addresses, int lo, int hi) {
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
                    swap(hashes, addresses, i++, j--);
                }
            }
            if (j - lo < hi - i) {
                sortByHash(hashes, addresses, lo, j);
                lo = i;
            } else {
                sortByHash(hashes, addresses, i, hi);
                hi = j;
            }
        }
        for (int i = lo + 1; i <= hi; i++) {
            for (int k = i; k > lo && Long.compareUnsigned(hashes[k - 1], hashes[k]) > 0; k--) {
                swap(hashes, addresses, k - 1, k);
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

    private static void swap(long[] hashes, long[] addresses, int i, int j) {
        long h = hashes[i];
        hashes[i] = hashes[j];
        hashes[j] = h;
        long a = addresses[i];
        addresses[i] = addresses[j];
        addresses[j] = a;
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
