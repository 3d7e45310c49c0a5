package dev.rolloutingest.bench;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.generations.SealedGeneration;
import java.nio.file.Path;
import java.util.Map;

/** The table of a one-table run, read directly. */
final class OneTableTarget implements SustainedTarget {
    private final RolloutTable table;
    private final Path tableDir;
    private final int partitions;

    OneTableTarget(RolloutTable table, Path tableDir, int partitions) {
        this.table = table;
        this.tableDir = tableDir;
        this.partitions = partitions;
    }

    @Override
    public long sealed() {
        return sealed(table);
    }

    @Override
    public long baseRows() {
        return table.countBaseRows();
    }

    @Override
    public Worst worst() {
        int worst = 0;
        String worstShard = "";
        Map<String, Long> watermarks = table.generations().watermarks();
        StringBuilder perShard = new StringBuilder();
        for (int p = 0; p < partitions; p++) {
            String shard = ShardId.of(SustainedRig.TOPIC, p);
            int pending = table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
            perShard.append(p == 0 ? "" : ",").append(pending);
            if (pending > worst) {
                worst = pending;
                worstShard = shard;
            }
        }
        return new Worst(worstShard, worst, perShard.toString());
    }

    @Override
    public long pendingRecords() {
        long records = 0;
        for (int p = 0; p < partitions; p++) {
            for (SealedGeneration seal : table.generations().pending(ShardId.of(SustainedRig.TOPIC, p))) {
                records += seal.lastOffset() - seal.firstOffset() + 1;
            }
        }
        return records;
    }

    @Override
    public int pendingTotal() {
        Map<String, Long> watermarks = table.generations().watermarks();
        int pending = 0;
        for (int p = 0; p < partitions; p++) {
            String shard = ShardId.of(SustainedRig.TOPIC, p);
            pending += table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
        }
        return pending;
    }

    @Override
    public void baseIds(java.util.function.BiConsumer<String, String> id) throws Exception {
        SustainedTarget.readIds(tableDir, "default", id);
    }

    @Override
    public void close() {
        table.close();
    }

    /** Records sealed into generations of the table, over every shard. */
    static long sealed(RolloutTable table) {
        long sealed = 0;
        for (String shard : table.generations().shards()) {
            sealed += table.generations().sealedRecords(shard);
        }
        return sealed;
    }
}
