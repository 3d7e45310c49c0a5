package dev.rolloutingest.launcher;

import dev.rolloutingest.table.RolloutTable;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;

/** Counts the demo shows each second: from the apps' meters and the tables themselves. */
record DemoProgress(
        long produced,
        long sealedRows,
        long generations,
        long mergedGenerations,
        long baseRows,
        long readable,
        long pending,
        double seconds) {
    static DemoProgress read(
            long produced,
            MeterRegistry ingest,
            MeterRegistry merge,
            java.util.Collection<RolloutTable> tables,
            long start) {
        long pending = 0;
        long baseRows = 0;
        long readable = 0;
        for (RolloutTable table : tables) {
            Map<String, Long> watermarks = table.generations().watermarks();
            for (String shard : table.generations().shards()) {
                pending += table.generations().pendingCount(shard, watermarks.getOrDefault(shard, 0L));
            }
            baseRows += table.countBaseRows();
            readable += table.countRows();
        }
        return new DemoProgress(
                produced,
                (long) count(ingest, "rollout.generation.rows"),
                // generations written (a seal writes one per table of its rows)
                ingest.find("rollout.generation.write").timers().stream()
                        .mapToLong(t -> t.count())
                        .sum(),
                (long) count(merge, "rollout.merge.generations"),
                baseRows,
                readable,
                pending,
                (System.nanoTime() - start) / 1e9);
    }

    private static double count(MeterRegistry registry, String name) {
        return registry.find(name).counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }

    String line(DemoProgress previous, long target) {
        double dt = previous == null ? seconds : Math.max(0.001, seconds - previous.seconds);
        long producedRate = (long) ((produced - (previous == null ? 0 : previous.produced)) / dt);
        long readableRate = (long) ((readable - (previous == null ? 0 : previous.readable)) / dt);
        return String.format(
                "[%5.1fs] produced %d/%d (%d/s) | sealed %d rows in %d generations | merged %d generations,"
                        + " base %d rows | readable %d (%d/s) | pending %d generations",
                seconds,
                produced,
                target,
                producedRate,
                sealedRows,
                generations,
                mergedGenerations,
                baseRows,
                readable,
                readableRate,
                pending);
    }
}
