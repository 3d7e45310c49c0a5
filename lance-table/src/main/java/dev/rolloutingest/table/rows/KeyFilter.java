package dev.rolloutingest.table.rows;

import dev.rolloutingest.table.storage.LanceIo;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.function.Consumer;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A Bloom filter of a generation's record_ids, written into its seal. Generations are immutable, so the
 * filter is exact about absence forever: a point lookup opens only the generations whose filter may hold
 * the key (about {@link #FALSE_POSITIVE_RATE} of the others by chance), not every pending one.
 *
 * <p>Hashing: 128-bit MurmurHash3 (x64) of the key's UTF-8 bytes, once per lookup for every filter it
 * checks; the i-th probe is {@code fmix64(h1 + i * h2)} modulo the filter's size. Re-mixing each probe keeps
 * the probes independent in small filters, where plain {@code h1 + i * h2} over a size with many common
 * factors (filters are whole 64-bit words) repeats positions and raises the false-positive rate.
 */
public final class KeyFilter {
    /**
     * 0.1 %: about 14.4 bits and 10 probes a key. Measured with `bench reads`: at 1 % a lookup over 200
     * pending generations (or 256 shards with one each) still opened ~2.5 of them by chance, ~2.4 ms each,
     * which put p99 at 3-13x the merged table's; at 0.1 % that is one open in four lookups.
     */
    public static final double FALSE_POSITIVE_RATE = 0.001;

    /** A key hashed once, to probe many filters. */
    public record Hash(long h1, long h2) {}

    private final long[] bits;
    private final int hashes;

    private KeyFilter(long[] bits, int hashes) {
        this.bits = bits;
        this.hashes = hashes;
    }

    /** A filter sized for the keys at {@link #FALSE_POSITIVE_RATE}. */
    public static KeyFilter of(Collection<String> keys) {
        KeyFilter filter = withCapacity(keys.size());
        for (String key : keys) {
            filter.add(hash(key));
        }
        return filter;
    }

    /** An empty filter that holds up to {@code capacity} keys at {@link #FALSE_POSITIVE_RATE}. */
    public static KeyFilter withCapacity(long capacity) {
        long n = Math.max(1, capacity);
        long m = (long) Math.ceil(-n * Math.log(FALSE_POSITIVE_RATE) / (Math.log(2) * Math.log(2)));
        long words = Math.max(1, (m + 63) / 64);
        if (words > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a key filter for " + capacity + " keys would exceed 16 GiB");
        }
        int k = Math.max(1, (int) Math.round((double) words * 64 / n * Math.log(2)));
        return new KeyFilter(new long[(int) words], Math.min(k, 30));
    }

    public static Hash hash(String key) {
        byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
        return murmur3x64(bytes);
    }

    /**
     * Hands {@code action} the hash of the record_id of every row of {@code dataset}, or of these fragments of it only
     * (null: all), read as one scan of that column; returns how many.
     */
    public static long forEachKey(Dataset dataset, List<Integer> fragmentIds, Consumer<Hash> action) {
        ScanOptions.Builder options = new ScanOptions.Builder()
                .columns(List.of(RolloutSchema.RECORD_ID))
                .batchSize(65_536);
        if (fragmentIds != null) {
            options.fragmentIds(fragmentIds);
        }
        long read = 0;
        try (LanceScanner scanner = dataset.newScan(options.build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VarCharVector ids = (VarCharVector) reader.getVectorSchemaRoot().getVector(RolloutSchema.RECORD_ID);
                for (int i = 0; i < ids.getValueCount(); i++) {
                    action.accept(murmur3x64(ids.get(i)));
                }
                read += ids.getValueCount();
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw LanceIo.unchecked(e);
        }
        return read;
    }

    public void add(Hash hash) {
        long size = (long) bits.length * 64;
        long combined = hash.h1();
        long step = hash.h2() | 1;
        for (int i = 0; i < hashes; i++) {
            long bit = Long.remainderUnsigned(fmix(combined), size);
            bits[(int) (bit >>> 6)] |= 1L << (bit & 63);
            combined += step;
        }
    }

    /** False only when the key is certainly not in the generation. */
    public boolean mightContain(Hash hash) {
        long size = (long) bits.length * 64;
        long combined = hash.h1();
        long step = hash.h2() | 1;
        for (int i = 0; i < hashes; i++) {
            long bit = Long.remainderUnsigned(fmix(combined), size);
            if ((bits[(int) (bit >>> 6)] & (1L << (bit & 63))) == 0) {
                return false;
            }
            combined += step;
        }
        return true;
    }

    public boolean mightContain(String key) {
        return mightContain(hash(key));
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof KeyFilter that && hashes == that.hashes && Arrays.equals(bits, that.bits);
    }

    @Override
    public int hashCode() {
        return 31 * hashes + Arrays.hashCode(bits);
    }

    @Override
    public String toString() {
        return "KeyFilter[" + bits.length * 64 + " bits, " + hashes + " probes]";
    }

    /** Serialized size in bytes (also its size in memory). */
    public long sizeBytes() {
        return bits.length * 8L;
    }

    /** "bloom-murmur3-v2:<probes>:<base64 little-endian words>": the form kept in the seal file. */
    public String encode() {
        ByteBuffer buffer = ByteBuffer.allocate(bits.length * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (long word : bits) {
            buffer.putLong(word);
        }
        return "bloom-murmur3-v2:" + hashes + ":" + Base64.getEncoder().encodeToString(buffer.array());
    }

    /** The filter from {@link #encode()}; null for anything else (then the generation must be opened). */
    public static KeyFilter decode(String encoded) {
        if (encoded == null || !encoded.startsWith("bloom-murmur3-v2:")) {
            return null;
        }
        String[] parts = encoded.split(":", 3);
        try {
            int hashes = Integer.parseInt(parts[1]);
            byte[] raw = Base64.getDecoder().decode(parts[2]);
            if (hashes < 1 || raw.length == 0 || raw.length % 8 != 0) {
                return null;
            }
            ByteBuffer buffer = ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN);
            long[] bits = new long[raw.length / 8];
            for (int i = 0; i < bits.length; i++) {
                bits[i] = buffer.getLong();
            }
            return new KeyFilter(bits, hashes);
        } catch (RuntimeException e) {
            return null;
        }
    }

    // MurmurHash3_x64_128 (public domain, Austin Appleby), seed 0.
    private static final long C1 = 0x87c37b91114253d5L;
    private static final long C2 = 0x4cf5ad432745937fL;

    public static Hash murmur3x64(byte[] data) {
        long h1 = 0;
        long h2 = 0;
        int blocks = data.length / 16;
        ByteBuffer in = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < blocks; i++) {
            long k1 = in.getLong(i * 16);
            long k2 = in.getLong(i * 16 + 8);
            h1 ^= mixK1(k1);
            h1 = Long.rotateLeft(h1, 27);
            h1 += h2;
            h1 = h1 * 5 + 0x52dce729;
            h2 ^= mixK2(k2);
            h2 = Long.rotateLeft(h2, 31);
            h2 += h1;
            h2 = h2 * 5 + 0x38495ab5;
        }
        long k1 = 0;
        long k2 = 0;
        int tail = blocks * 16;
        switch (data.length & 15) {
            case 15:
                k2 ^= (long) (data[tail + 14] & 0xff) << 48;
            case 14:
                k2 ^= (long) (data[tail + 13] & 0xff) << 40;
            case 13:
                k2 ^= (long) (data[tail + 12] & 0xff) << 32;
            case 12:
                k2 ^= (long) (data[tail + 11] & 0xff) << 24;
            case 11:
                k2 ^= (long) (data[tail + 10] & 0xff) << 16;
            case 10:
                k2 ^= (long) (data[tail + 9] & 0xff) << 8;
            case 9:
                k2 ^= data[tail + 8] & 0xff;
                h2 ^= mixK2(k2);
            case 8:
                k1 ^= (long) (data[tail + 7] & 0xff) << 56;
            case 7:
                k1 ^= (long) (data[tail + 6] & 0xff) << 48;
            case 6:
                k1 ^= (long) (data[tail + 5] & 0xff) << 40;
            case 5:
                k1 ^= (long) (data[tail + 4] & 0xff) << 32;
            case 4:
                k1 ^= (long) (data[tail + 3] & 0xff) << 24;
            case 3:
                k1 ^= (long) (data[tail + 2] & 0xff) << 16;
            case 2:
                k1 ^= (long) (data[tail + 1] & 0xff) << 8;
            case 1:
                k1 ^= data[tail] & 0xff;
                h1 ^= mixK1(k1);
            default:
                break;
        }
        h1 ^= data.length;
        h2 ^= data.length;
        h1 += h2;
        h2 += h1;
        h1 = fmix(h1);
        h2 = fmix(h2);
        h1 += h2;
        h2 += h1;
        return new Hash(h1, h2);
    }

    private static long mixK1(long k1) {
        k1 *= C1;
        k1 = Long.rotateLeft(k1, 31);
        return k1 * C2;
    }

    private static long mixK2(long k2) {
        k2 *= C2;
        k2 = Long.rotateLeft(k2, 33);
        return k2 * C1;
    }

    private static long fmix(long k) {
        k ^= k >>> 33;
        k *= 0xff51afd7ed558ccdL;
        k ^= k >>> 33;
        k *= 0xc4ceb9fe1a85ec53L;
        k ^= k >>> 33;
        return k;
    }
}
