package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.merge.RoundWrite;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.snapshots.TableSnapshots.SnapshotException;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import dev.rolloutingest.table.storage.UnmarkedDeletes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.Version;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/** Which base version a snapshot tags: the newest that holds exactly what its watermarks say, within the cut. */
final class SnapshotVersions {
    /** How many base versions, newest first, a cut in the past searches for one at or below it. */
    static final int MAX_VERSIONS_SEARCHED = 1_000;

    private SnapshotVersions() {}

    /** A version's rows as a snapshot counts them: delete rows an earlier version kept in the base left out. */
    static long liveRows(Dataset at) {
        return at.countRows() - Tombstones.count(at);
    }

    /**
     * The newest base version that holds exactly what its watermarks say and, for a bounded cut ({@code targets} not
     * null), whose every watermark is at or below its target. A round commits its rows (values and deletes alike, all
     * rows: {@link RoundWrite}) before its marks, so every version between the two, whoever made it, is passed over:
     * it holds rows above the watermarks, or its newest data commit names deletes its watermarks do not cover ({@link
     * UnmarkedDeletes}: a delete leaves no row in the base).
     */
    static long consistentVersion(
            TableLocation location, Dataset base, Map<String, Long> targets, Map<String, Integer> partitions) {
        List<Version> versions = new ArrayList<>(base.listVersions());
        versions.sort(Comparator.comparingLong(Version::getId).reversed());
        int searched = 0;
        for (Version version : versions) {
            if (searched++ >= MAX_VERSIONS_SEARCHED) {
                break;
            }
            try (Dataset at = base.checkoutVersion(version.getId())) {
                Map<String, Long> watermarks = MemWalWatermarks.read(at);
                boolean within = targets == null
                        || targets.entrySet().stream()
                                .allMatch(
                                        t -> Long.compareUnsigned(watermarks.getOrDefault(t.getKey(), 0L), t.getValue())
                                                <= 0);
                if (within
                        && UnmarkedDeletes.at(at, watermarks).isEmpty()
                        && holdsOnlyMerged(location, at, watermarks, partitions)) {
                    return version.getId();
                }
            }
        }
        throw new SnapshotException(
                SnapshotException.Kind.BAD_REQUEST,
                "No base version of the last " + searched + " holds the cut: every one has merged past it (versions"
                        + " older than the GC grace are removed); cut at or after the merged offsets");
    }

    /** True when no row of the version lies at or above its partition's watermark: one scan of two columns. */
    private static boolean holdsOnlyMerged(
            TableLocation location, Dataset at, Map<String, Long> watermarks, Map<String, Integer> partitions) {
        if (partitions.isEmpty()) {
            return true;
        }
        List<String> above = new ArrayList<>();
        partitions.forEach((shard, p) -> above.add("(" + RolloutSchema.SOURCE_PARTITION + " = " + p + " AND "
                + RolloutSchema.SOURCE_OFFSET + " >= " + watermarks.getOrDefault(shard, 0L) + ")"));
        try (LanceScanner scanner = at.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.SOURCE_PARTITION))
                        .filter(String.join(" OR ", above))
                        .limit(1)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                if (reader.getVectorSchemaRoot().getRowCount() > 0) {
                    return false;
                }
            }
            return true;
        } catch (Exception e) {
            throw new RolloutTableException(
                    "Table " + location + ": checking version " + at.version() + " failed: " + e.getMessage(), e);
        }
    }
}
