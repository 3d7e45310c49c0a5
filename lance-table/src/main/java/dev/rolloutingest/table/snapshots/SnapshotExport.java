package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.rows.LiveRows;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.snapshots.TableSnapshots.Snapshot;
import dev.rolloutingest.table.snapshots.TableSnapshots.SnapshotException;
import dev.rolloutingest.table.storage.LanceIo;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import org.lance.Dataset;
import org.lance.WriteParams;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A snapshot's rows written as a standalone lance dataset, deletes left out, its offsets, source table and version in
 * the dataset's config: what a training run takes elsewhere without the table.
 */
final class SnapshotExport {
    private static final Logger log = LoggerFactory.getLogger(SnapshotExport.class);

    private final LanceIo lance;

    SnapshotExport(LanceIo lance) {
        this.lance = lance;
    }

    /**
     * Writes the rows of {@code snapshot}, read from {@code open} (the base at its version, closed here), at {@code
     * target}, which must not hold a dataset. Returns the rows written.
     */
    long export(Snapshot snapshot, Supplier<Dataset> open, TableLocation target) {
        String name = snapshot.name();
        requireNoDataset(name, target);
        try (Dataset at = open.get();
                LanceScanner scanner = at.newScan(new ScanOptions.Builder()
                        .columns(RolloutSchema.allColumns())
                        .batchSize(4096)
                        .build())) {
            // the write takes the reader over and closes it
            try (Dataset written = Dataset.write()
                    .allocator(lance.allocator())
                    .reader(new LiveRows(lance.allocator(), scanner.scanBatches()))
                    .uri(target.uri())
                    .storageOptions(target.storageOptions())
                    .mode(WriteParams.WriteMode.CREATE)
                    .execute()) {
                Map<String, String> config = new LinkedHashMap<>();
                config.put(SnapshotTags.OFFSETS, SnapshotTags.format(snapshot.offsets()));
                config.put("rollout.snapshot.name", name);
                config.put("rollout.snapshot.source.table", lance.location().uri());
                config.put("rollout.snapshot.source.version", Long.toString(snapshot.version()));
                written.updateConfig(config);
                long rows = written.countRows();
                log.info("Table {}: snapshot {} exported to {}: {} rows", lance.location(), name, target, rows);
                return rows;
            }
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw new RolloutTableException(
                    "Table " + lance.location() + ": exporting snapshot " + name + " to " + target + " failed: "
                            + e.getMessage(),
                    e);
        }
    }

    /** Refuses a target that holds a dataset already: an export never overwrites. */
    private void requireNoDataset(String name, TableLocation target) {
        LanceIo out = new LanceIo(target, lance.allocator(), 16L << 20);
        try (Dataset existing = out.openBase()) {
            throw new SnapshotException(
                    SnapshotException.Kind.CONFLICT,
                    "Cannot export snapshot " + name + ": " + target.uri() + " already holds a dataset (version "
                            + existing.version() + ")");
        } catch (SnapshotException e) {
            throw e;
        } catch (RuntimeException absent) {
            // nothing there: the export creates it
        } finally {
            out.close();
        }
    }
}
