package dev.rolloutingest.bench;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.ScanOptions;

/**
 * What a sustained, capacity or merge-instances run reads of the table or tables it fills: sealed and merged records,
 * pending generations, and every record_id of the bases for the final count. One table is read directly ({@link
 * OneTableTarget}), many through the merge-worker's /pending and the tables ({@link ManyTablesTarget}).
 */
interface SustainedTarget extends AutoCloseable {
    /** Records sealed into generations, over every shard (and table). */
    long sealed();

    /** Records in the base (or bases). */
    long baseRows();

    /** The shard (of a table) with the most pending generations now, and how many. */
    Worst worst() throws Exception;

    /** Pending generations, over every shard (and table). */
    int pendingTotal() throws Exception;

    /** Records of the pending generations, over every shard; -1 where the target does not read them. */
    default long pendingRecords() throws Exception {
        return -1;
    }

    /** Every record_id of the base (or of each table's base, with the table's name), read by lance-core alone. */
    void baseIds(java.util.function.BiConsumer<String, String> id) throws Exception;

    @Override
    void close();

    /** Where the run's worst backlog is, how many generations wait there, and the per-shard counts sampled. */
    record Worst(String where, int pending, String perShard) {}

    /** Every record_id of the base at {@code tableDir}, read by lance-core alone. */
    static void readIds(Path tableDir, String name, java.util.function.BiConsumer<String, String> id) throws Exception {
        try (BufferAllocator allocator = new RootAllocator();
                Dataset base = Dataset.open(tableDir.toString(), allocator);
                var scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of("record_id"))
                        .batchSize(65_536)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                VarCharVector ids = (VarCharVector) reader.getVectorSchemaRoot().getVector("record_id");
                for (int i = 0; i < ids.getValueCount(); i++) {
                    id.accept(name, new String(ids.get(i), StandardCharsets.UTF_8));
                }
            }
        }
    }
}
