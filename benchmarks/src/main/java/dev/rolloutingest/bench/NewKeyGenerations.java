package dev.rolloutingest.bench;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.RolloutRow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/** Generations of new keys for the fleet benchmarks: generation g of table t holds keys t{t}-{offset}, partition 0. */
final class NewKeyGenerations {
    /** Table settings for a bench that builds a backlog on purpose: no warning, no refusal at any pending count. */
    static final TableSettings UNBOUNDED_PENDING = TableSettings.DEFAULTS
            .with(TableSettings.PENDING_WARN_GENERATIONS, 0)
            .with(TableSettings.PENDING_MAX_GENERATIONS, 0);

    private final String topic;
    private final int rows;
    private final RolloutGenerator generator;
    private final int payloadBytes;

    NewKeyGenerations(String topic, int rows, int payloadBytes) {
        this.topic = topic;
        this.rows = rows;
        this.payloadBytes = payloadBytes;
        this.generator = new RolloutGenerator("bench", payloadBytes, 3);
    }

    /** Writes generation {@code g} (offsets g x rows ...) of table number {@code t}. */
    void write(RolloutTable table, int t, int g) {
        long first = (long) g * rows;
        List<RolloutRow> batch = new ArrayList<>(rows);
        for (long o = first; o < first + rows; o++) {
            Rollout rollout = generator.rollout(o, (int) o);
            rollout.setRecordId("t" + t + "-" + o);
            batch.add(new RolloutRow(rollout, 0, o, Instant.now()));
        }
        table.generations().write(topic, 0, first, first + rows - 1, batch, rows * (payloadBytes + 76L));
    }
}
