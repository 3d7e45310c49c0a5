package dev.rolloutingest.testsupport;

import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.rows.Tombstones;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * A table's base as a plain lance-core reader sees it, with none of the project's read path: each key's row, every one
 * live (the deletes are kept beside the base: a row whose metadata holds {@link Tombstones#MARKER} fails the read).
 */
public final class BaseRows {
    private BaseRows() {}

    /**
     * record_id to policy_version of the base's rows at a tag (null: the latest version). Fails on a key the base holds
     * twice and on a delete row in the base (a plain reader would see it as a record).
     */
    public static Map<String, Long> live(TableLocation location, String tag) {
        Map<String, Long> live = new TreeMap<>();
        Set<String> seen = new HashSet<>();
        List<String> twice = new ArrayList<>();
        List<String> deletes = new ArrayList<>();
        try (RootAllocator allocator = new RootAllocator();
                Dataset latest =
                        Dataset.open().allocator(allocator).uri(location.uri()).build();
                Dataset base = tag == null ? latest.checkoutVersion(latest.version()) : latest.checkoutTag(tag);
                LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of("record_id", "policy_version", "metadata"))
                        .build());
                ArrowReader rows = scanner.scanBatches()) {
            while (rows.loadNextBatch()) {
                VectorSchemaRoot batch = rows.getVectorSchemaRoot();
                VarCharVector ids = (VarCharVector) batch.getVector("record_id");
                ListVector metadata = (ListVector) batch.getVector("metadata");
                for (int i = 0; i < batch.getRowCount(); i++) {
                    String id = new String(ids.get(i), StandardCharsets.UTF_8);
                    if (!seen.add(id)) {
                        twice.add(id);
                    }
                    Object entries = metadata.getObject(i);
                    if (entries != null && entries.toString().contains(Tombstones.MARKER)) {
                        deletes.add(id);
                        continue;
                    }
                    Object version = batch.getVector("policy_version").getObject(i);
                    live.put(id, version == null ? null : ((Number) version).longValue());
                }
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        if (!deletes.isEmpty()) {
            throw new AssertionError("delete rows in the base, which a plain reader sees as records: " + deletes);
        }
        if (!twice.isEmpty()) {
            throw new AssertionError("keys the base holds twice: " + twice);
        }
        return live;
    }
}
