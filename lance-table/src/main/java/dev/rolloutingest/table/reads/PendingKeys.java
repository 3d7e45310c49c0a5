package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.NewestWins.Order;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseIntVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * The newest pending row of every key by {@link Order#replaces} (its partition, offset and ingest time only), read from
 * every pending generation of a catalog snapshot: what tells a bulk read which base rows are replaced and which pending
 * rows are the newest. Bounded: more pending rows than {@code rollout.scan.pending.max.rows} fail the read.
 *
 * <p>Over 300 lines because the keys live in open-addressing tables and a filter of primitive arrays (objects per key
 * cost several times the memory), whose probing and reading are written here once.
 */
final class PendingKeys {
    static final List<String> ORDER_COLUMNS = List.of(
            RolloutSchema.RECORD_ID,
            RolloutSchema.SOURCE_PARTITION,
            RolloutSchema.SOURCE_OFFSET,
            RolloutSchema.INGESTED_AT);

    /** Never changed once built: one instance serves every read of a catalog snapshot, concurrently. */
    private final Map<String, Order> newest;

    /** The keys' hashes in an open-addressing table (0 = empty slot). */
    private final long[] hashes;

    /** Two bits of each key's hash in one word of a bit filter. */
    private final long[] filter;

    /** Heap this holds, roughly: counted in its catalog's resident memory for as long as the snapshot is current. */
    private final long bytes;

    /**
     * A key's map entry (node and table slot), its String and Order: counted here too, since they outlive the
     * generation rows they came from once those are evicted.
     */
    private static final long KEY_BYTES = 144;

    private PendingKeys(Map<String, Order> newest) {
        this.newest = newest;
        int keys = Math.max(newest.size(), 8);
        long[] table = new long[Integer.highestOneBit(keys * 2 - 1) << 1]; // at most half full
        long[] words = new long[Integer.highestOneBit(keys / 4 + 1) << 1]; // >= 16 bits a key
        int mask = table.length - 1;
        long held = 8L * (table.length + words.length);
        for (String key : newest.keySet()) {
            held += KEY_BYTES + key.length();
            long hash = hash(key.getBytes(StandardCharsets.UTF_8));
            words[(int) (hash >>> 32) & (words.length - 1)] |= (1L << hash) | (1L << (hash >>> 6));
            int slot = (int) hash & mask;
            while (table[slot] != 0 && table[slot] != hash) {
                slot = (slot + 1) & mask;
            }
            table[slot] = hash;
        }
        this.filter = words;
        this.hashes = table;
        this.bytes = held;
    }

    long bytes() {
        return bytes;
    }

    /** No pending row (a snapshot's version, or a read that needs none). */
    static PendingKeys none() {
        return new PendingKeys(Map.of());
    }

    /** Given keys and their newest pending rows. */
    static PendingKeys of(Map<String, Order> newest) {
        return new PendingKeys(new HashMap<>(newest));
    }

    /**
     * Every pending key of the snapshot and its newest row, from the rows kept with each generation's handle; read
     * once a snapshot (it keeps the answer for the reads after).
     */
    static PendingKeys read(ReadCatalog catalog, ReadCatalog.Snapshot snapshot, long maxRows, String tableUri) {
        return snapshot.pendingKeys(() -> merge(catalog, snapshot, maxRows, tableUri));
    }

    private static PendingKeys merge(
            ReadCatalog catalog, ReadCatalog.Snapshot snapshot, long maxRows, String tableUri) {
        Map<String, Order> newest = new HashMap<>();
        long rows = 0;
        for (List<ReadCatalog.Pending> shard : snapshot.pendingByShard.values()) {
            for (ReadCatalog.Pending generation : shard) {
                GenerationRows read;
                try (DatasetHandles.Lease lease = catalog.generation(generation.listed())) {
                    read = lease.rows();
                } catch (RuntimeException e) {
                    throw new RolloutTableException.GenerationUnreadable(
                            tableUri,
                            generation.listed().shard(),
                            generation.listed().generation(),
                            generation.listed().folder(),
                            e);
                }
                rows += read.size();
                if (rows > maxRows) {
                    throw new RolloutTableException.TooManyPendingRows(
                            tableUri, rows, maxRows, TableSettings.SCAN_PENDING_MAX_ROWS);
                }
                for (int i = 0; i < read.size(); i++) {
                    newest.merge(read.key(i), read.order(i), (current, row) -> row.replaces(current) ? row : current);
                }
            }
        }
        return new PendingKeys(newest);
    }

    /**
     * The key, order, row address and delete mark of every row of one generation: read once (one scan of those
     * columns) and kept with its dataset handle, since a generation never changes. Each scan and tail poll then merges
     * the keys without a read, and its pass over the generation reads the projection alone: a row's key, order and
     * kind come from here by its address.
     */
    static final class GenerationRows {
        private final long[] addresses;
        private final String[] keys;
        private final Order[] orders;
        private final BitSet deletes;
        private final long bytes;

        private GenerationRows(long[] addresses, String[] keys, Order[] orders, BitSet deletes, long bytes) {
            this.addresses = addresses;
            this.keys = keys;
            this.orders = orders;
            this.deletes = deletes;
            this.bytes = bytes;
        }

        static GenerationRows read(Dataset generation) {
            int rows = 0;
            long[] addresses = new long[1024];
            String[] keys = new String[1024];
            Order[] orders = new Order[1024];
            BitSet deletes = new BitSet();
            long bytes = 0;
            boolean ordered = true;
            List<String> columns = new ArrayList<>(ORDER_COLUMNS);
            columns.add(RolloutSchema.EXPERIMENT); // with metadata: tells a delete row
            columns.add(RolloutSchema.METADATA);
            try (LanceScanner scanner = generation.newScan(new ScanOptions.Builder()
                            .columns(columns)
                            .withRowAddress(true)
                            .batchSize(8192)
                            .build());
                    ArrowReader reader = scanner.scanBatches()) {
                while (reader.loadNextBatch()) {
                    VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                    BaseIntVector address = (BaseIntVector) batch.getVector(ROW_ADDRESS);
                    VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                    IntVector partition = (IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION);
                    BigIntVector offset = (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET);
                    TimeStampMicroTZVector at = (TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT);
                    if (rows + batch.getRowCount() > keys.length) {
                        int capacity = Math.max(keys.length * 2, rows + batch.getRowCount());
                        addresses = Arrays.copyOf(addresses, capacity);
                        keys = Arrays.copyOf(keys, capacity);
                        orders = Arrays.copyOf(orders, capacity);
                    }
                    for (int i = 0; i < batch.getRowCount(); i++, rows++) {
                        addresses[rows] = address.getValueAsLong(i);
                        ordered &= rows == 0 || addresses[rows] > addresses[rows - 1];
                        keys[rows] = ids.getObject(i).toString();
                        orders[rows] = new Order(partition.get(i), offset.get(i), at.get(i));
                        if (Tombstones.is(batch, i)) {
                            deletes.set(rows);
                        }
                        bytes += ROW_BYTES + keys[rows].length();
                    }
                }
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException("reading the order columns failed: " + e.getMessage(), e);
            }
            GenerationRows read = new GenerationRows(
                    Arrays.copyOf(addresses, rows),
                    Arrays.copyOf(keys, rows),
                    Arrays.copyOf(orders, rows),
                    deletes,
                    bytes);
            return ordered ? read : read.byAddress(); // rows are found by binary search of their address
        }

        /** The same rows in the order of their addresses. */
        private GenerationRows byAddress() {
            Integer[] order = new Integer[keys.length];
            Arrays.setAll(order, i -> i);
            Arrays.sort(order, (a, b) -> Long.compare(addresses[a], addresses[b]));
            BitSet sortedDeletes = new BitSet();
            for (int i = 0; i < order.length; i++) {
                sortedDeletes.set(i, deletes.get(order[i]));
            }
            return new GenerationRows(
                    Arrays.stream(order).mapToLong(i -> addresses[i]).toArray(),
                    Arrays.stream(order).map(i -> keys[i]).toArray(String[]::new),
                    Arrays.stream(order).map(i -> orders[i]).toArray(Order[]::new),
                    sortedDeletes,
                    bytes);
        }

        int size() {
            return keys.length;
        }

        /** The row at a row address ({@link #ROW_ADDRESS}) of this generation's dataset. */
        int row(long address) {
            int row = Arrays.binarySearch(addresses, address);
            if (row < 0) {
                throw new IllegalStateException("no row at address " + address + " of a pending generation");
            }
            return row;
        }

        String key(int row) {
            return keys[row];
        }

        /** The row's address in the generation's dataset (rows are in address order). */
        long address(int row) {
            return addresses[row];
        }

        Order order(int row) {
            return orders[row];
        }

        boolean delete(int row) {
            return deletes.get(row);
        }

        /** About what it holds in memory: the key's String, its order and address and the references, per row. */
        long bytes() {
            return bytes;
        }

        /** A key's String (headers and array), its Order, its address and three slots, beside the key's characters. */
        private static final long ROW_BYTES = 112;
    }

    /** The column lance adds with {@code withRowAddress}: fragment id (high 32 bits) and row in it. */
    static final String ROW_ADDRESS = "_rowaddr";

    boolean isEmpty() {
        return newest.isEmpty();
    }

    int size() {
        return newest.size();
    }

    java.util.Set<String> keys() {
        return newest.keySet();
    }

    /**
     * Whether a key, given as its UTF-8 bytes at {@code address} (off-heap, e.g. in an Arrow buffer the caller has
     * checked covers them), may be a pending key: false means it is not; true needs {@link #newest} to tell (a 64-bit
     * hash match, almost always the key). Lets a pass over a million base rows check each key without making it a
     * String.
     */
    boolean mayHold(long address, int length) {
        long hash = hash(address, length);
        // most keys are not pending: two bits of a small filter (cache-resident, unlike the table) tell ~98 % of them
        long bits = (1L << hash) | (1L << (hash >>> 6));
        if ((filter[(int) (hash >>> 32) & (filter.length - 1)] & bits) != bits) {
            return false;
        }
        int mask = hashes.length - 1;
        for (int slot = (int) hash & mask; hashes[slot] != 0; slot = (slot + 1) & mask) {
            if (hashes[slot] == hash) {
                return true;
            }
        }
        return false;
    }

    private static final VarHandle LITTLE_ENDIAN_LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    /**
     * A key's hash from its UTF-8 bytes off-heap, read without bounds checks (an ArrowBuf's checked reads cost more
     * than the hash itself); equal to {@link #hash(byte[])} of the same bytes.
     */
    static long hash(long address, int length) {
        long h = SEED ^ length;
        int i = 0;
        for (; i + 8 <= length; i += 8) {
            long word = MemoryUtil.getLong(address + i);
            h = mix(h, MemoryUtil.LITTLE_ENDIAN ? word : Long.reverseBytes(word));
        }
        if (i < length && length >= 8) { // the last word, overlapping the one before: no byte loop
            long word = MemoryUtil.getLong(address + length - 8);
            return finish(mix(h, MemoryUtil.LITTLE_ENDIAN ? word : Long.reverseBytes(word)));
        }
        long tail = 0;
        for (int shift = 0; i < length; i++, shift += 8) {
            tail |= (MemoryUtil.getByte(address + i) & 0xffL) << shift;
        }
        return finish(mix(h, tail));
    }

    /** A key's hash from its UTF-8 bytes. */
    static long hash(byte[] bytes) {
        long h = SEED ^ bytes.length;
        int i = 0;
        for (; i + 8 <= bytes.length; i += 8) {
            h = mix(h, (long) LITTLE_ENDIAN_LONGS.get(bytes, i));
        }
        if (i < bytes.length && bytes.length >= 8) {
            return finish(mix(h, (long) LITTLE_ENDIAN_LONGS.get(bytes, bytes.length - 8)));
        }
        long tail = 0;
        for (int shift = 0; i < bytes.length; i++, shift += 8) {
            tail |= (bytes[i] & 0xffL) << shift;
        }
        return finish(mix(h, tail));
    }

    private static final long SEED = 0x9E3779B97F4A7C15L;

    private static long mix(long h, long word) {
        return Long.rotateLeft(h ^ (word * 0xC2B2AE3D27D4EB4FL), 31) * 0x9E3779B97F4A7C15L;
    }

    /** Never 0, the empty slot. */
    private static long finish(long h) {
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        return h == 0 ? 1 : h;
    }

    /** The key's newest pending row, or null when no pending generation holds the key. */
    Order newest(String key) {
        return newest.get(key);
    }
}
