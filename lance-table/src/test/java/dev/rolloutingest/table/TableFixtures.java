package dev.rolloutingest.table;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/** Builders shared by the table tests. */
final class TableFixtures {
    static final String TOPIC = "rollouts";

    private TableFixtures() {}

    static Path freshDir(String name) {
        return Path.of("target", "tables", name + "-" + UUID.randomUUID()).toAbsolutePath();
    }

    static RolloutTable localTable(String name, SimpleMeterRegistry meters) {
        return localTable(name, meters, TableSettings.DEFAULTS);
    }

    static RolloutTable localTable(String name, SimpleMeterRegistry meters, TableSettings settings) {
        return RolloutTable.createOrOpen(TableLocation.local(freshDir(name)), settings, meters);
    }

    /** Rows for offsets [first, last] of a partition; record i gets id exp-(i % keys), version = offset. */
    static List<RolloutRow> rows(int partition, long first, long last, int keys) {
        RolloutGenerator generator = new RolloutGenerator("exp", 8, 42);
        List<RolloutRow> rows = new ArrayList<>();
        for (long offset = first; offset <= last; offset++) {
            Rollout rollout = generator.rollout(offset % keys, (int) offset);
            rows.add(new RolloutRow(rollout, partition, offset, Instant.now()));
        }
        return rows;
    }

    static SealedGeneration write(RolloutTable table, int partition, long first, long last, int keys) {
        return table.writeGeneration(
                TOPIC, partition, first, last, rows(partition, first, last, keys), 100 * (last - first + 1));
    }

    /** Merged rows of a path, from a table's meters. */
    static double mergedRows(SimpleMeterRegistry meters, MergeRound.Path path) {
        return meters.get("rollout.merge.rows")
                .tag("path", path.name().toLowerCase(Locale.ROOT))
                .counter()
                .count();
    }
}
