package dev.rolloutingest.table.generations;

import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutSchema;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * Where each record_id sits in one generation dataset: its keys' 64-bit hashes, sorted, with their row
 * numbers (12 bytes a key). Generations are immutable, so this is loaded once (one scan of the record_id
 * column) and then a lookup that the generation's Bloom filter let through is answered exactly: absent keys
 * cost a binary search instead of a filtered scan, present ones a {@code take} of one row.
 */
public final class GenerationKeys {
    private final long[] hashes;
    private final int[] rows;

    private GenerationKeys(long[] hashes, int[] rows) {
        this.hashes = hashes;
        this.rows = rows;
    }

    public static GenerationKeys load(Dataset generation) {
        long[] hashes = new long[1024];
        int count = 0;
        try (LanceScanner scanner = generation.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.RECORD_ID))
                        .batchSize(8192)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VarCharVector ids = (VarCharVector) reader.getVectorSchemaRoot().getVector(RolloutSchema.RECORD_ID);
                for (int i = 0; i < ids.getValueCount(); i++) {
                    if (count == hashes.length) {
                        hashes = Arrays.copyOf(hashes, count * 2);
                    }
                    hashes[count++] = KeyFilter.murmur3x64(ids.get(i)).h1();
                }
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("reading record_ids failed: " + e.getMessage(), e);
        }
        // Sort (hash, row) pairs by hash, keeping each hash's row.
        long[][] pairs = new long[count][];
        for (int i = 0; i < count; i++) {
            pairs[i] = new long[] {hashes[i], i};
        }
        Arrays.sort(pairs, (a, b) -> Long.compare(a[0], b[0]));
        long[] sortedHashes = new long[count];
        int[] sortedRows = new int[count];
        for (int i = 0; i < count; i++) {
            sortedHashes[i] = pairs[i][0];
            sortedRows[i] = (int) pairs[i][1];
        }
        return new GenerationKeys(sortedHashes, sortedRows);
    }

    /** Row numbers whose key has this hash (almost always zero or one). */
    public long[] rowsOf(KeyFilter.Hash hash) {
        int at = Arrays.binarySearch(hashes, hash.h1());
        if (at < 0) {
            return new long[0];
        }
        int from = at;
        while (from > 0 && hashes[from - 1] == hash.h1()) {
            from--;
        }
        int to = at;
        while (to + 1 < hashes.length && hashes[to + 1] == hash.h1()) {
            to++;
        }
        long[] found = new long[to - from + 1];
        for (int i = from; i <= to; i++) {
            found[i - from] = rows[i];
        }
        return found;
    }

    public int keys() {
        return hashes.length;
    }
}
