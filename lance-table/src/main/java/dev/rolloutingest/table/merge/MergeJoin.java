package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.NewestWins;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.storage.LanceIo;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * How a merge commit finds the base rows its source replaces: through the record_id index ({@code record_id IN
 * (...)}, 256 keys a lookup, ~0.2 ms a key) or by a scan of the base's key and order columns probing the source's
 * keys (~0.5 us a base row, whatever the source). A source that is small next to the base takes the index; a larger
 * one the scan, up to {@code rollout.merge.scan.join.max.base.rows} base rows, above which the index again (a scan's
 * time grows with the base). Either way every key is checked exactly, and each row found carries its address (the
 * commit marks it deleted) and its order ({@link NewestWins}).
 */
public enum MergeJoin {
    SCAN,
    INDEX;

    /** A base row of a key: where it sits ({@code _rowaddr}: fragment id high, row offset low) and its order. */
    record BaseRow(long address, int partition, long offset, long ingestedMicros) {
        int fragment() {
            return (int) (address >>> 32);
        }

        int rowOffset() {
            return (int) address;
        }
    }

    /** The row address and order columns of a batch, looked up once for all its rows. */
    record BaseRowColumns(
            UInt8Vector addresses, IntVector partitions, BigIntVector offsets, TimeStampMicroTZVector ingested) {
        static BaseRowColumns of(VectorSchemaRoot batch) {
            return new BaseRowColumns(
                    (UInt8Vector) batch.getVector("_rowaddr"),
                    (IntVector) batch.getVector(RolloutSchema.SOURCE_PARTITION),
                    (BigIntVector) batch.getVector(RolloutSchema.SOURCE_OFFSET),
                    (TimeStampMicroTZVector) batch.getVector(RolloutSchema.INGESTED_AT));
        }

        BaseRow row(int i) {
            return new BaseRow(addresses.get(i), partition(i), offset(i), ingestedMicros(i));
        }

        int partition(int i) {
            return partitions.get(i);
        }

        long offset(int i) {
            return offsets.get(i);
        }

        long ingestedMicros(int i) {
            return ingested.get(i);
        }
    }

    /** The index for a base over {@code scanMaxBaseRows} rows (0 = always), the scan otherwise. */
    static MergeJoin forBase(long baseRows, long scanMaxBaseRows) {
        return scanMaxBaseRows > 0 && baseRows <= scanMaxBaseRows ? SCAN : INDEX;
    }

    /**
     * The lookup for a commit of {@code sourceRows} keys to check: a source that is small next to the base (the keys
     * the key filter could not rule out, usually none) through the index, whose cost is the source's; otherwise as
     * {@link #forBase}.
     */
    static MergeJoin forCommit(long sourceRows, long baseRows, long scanMaxBaseRows) {
        if (sourceRows * SMALL_SOURCE_FRACTION <= baseRows) {
            return INDEX;
        }
        return forBase(baseRows, scanMaxBaseRows);
    }

    /**
     * A source of at most 1/this of the base's rows is looked up through the index: ~200 us a key against ~0.5 us a
     * base row for the scan, so the index wins below ~2,000 keys a million base rows.
     */
    static final long SMALL_SOURCE_FRACTION = 1_000;

    static final List<String> COLUMNS = List.of(
            RolloutSchema.RECORD_ID,
            RolloutSchema.SOURCE_PARTITION,
            RolloutSchema.SOURCE_OFFSET,
            RolloutSchema.INGESTED_AT);

    /** Every base row of the keys, by key (a key the base lacks is absent). */
    public Map<String, List<BaseRow>> find(Dataset base, Collection<String> keys) {
        Map<String, List<BaseRow>> found = new HashMap<>();
        if (keys.isEmpty()) {
            return found;
        }
        if (this == INDEX) {
            for (String in : Filters.recordIdIn(new ArrayList<>(keys))) {
                scan(base, in, null, found);
            }
        } else {
            scan(base, null, new HashSet<>(keys), found);
        }
        return found;
    }

    private static void scan(Dataset base, String filter, Set<String> wanted, Map<String, List<BaseRow>> found) {
        ScanOptions.Builder options =
                new ScanOptions.Builder().columns(COLUMNS).withRowAddress(true).batchSize(65_536);
        if (filter != null) {
            options.filter(filter);
        }
        try (LanceScanner scanner = base.newScan(options.build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                BaseRowColumns columns = BaseRowColumns.of(batch);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    String key = new String(ids.get(i), StandardCharsets.UTF_8);
                    if (wanted != null && !wanted.contains(key)) {
                        continue;
                    }
                    found.computeIfAbsent(key, k -> new ArrayList<>(1)).add(columns.row(i));
                }
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw LanceIo.unchecked(e);
        }
    }

    public String tag() {
        return name().toLowerCase(Locale.ROOT);
    }
}
