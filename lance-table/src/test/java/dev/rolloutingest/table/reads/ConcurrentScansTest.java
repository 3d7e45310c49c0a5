package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.rows.RolloutSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Scans running side by side while generations are sealed and merged: they share the generations' kept keys and
 * columns, which a merge drops from the cache under them. Every scan hands over every key once, never older than the
 * newest value merged before it began, and closing the table finds no Arrow memory left (its allocator fails on a
 * leak).
 */
class ConcurrentScansTest {
    private static final int KEYS = 200;
    private static final int SCANNERS = 3;

    @Test
    // a deadlock between the scans' leases and the cache fails the test, rather than hanging the build
    @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void scansSideBySideWithSealsAndMergesSeeEveryKeyOnceAndLeakNothing() throws Exception {
        TableSettings settings = TableSettings.DEFAULTS
                .with(TableSettings.READ_REFRESH_MS, 0L)
                .with(TableSettings.SCAN_MAX_CONCURRENT, SCANNERS);
        AtomicLong mergedUpTo = new AtomicLong(-1);
        AtomicLong scans = new AtomicLong();
        try (RolloutTable table = TableFixtures.localTable("concurrent-scans", new SimpleMeterRegistry(), settings)) {
            TableFixtures.write(table, 0, 0, KEYS - 1, KEYS);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(100, Long.MAX_VALUE));
            mergedUpTo.set(KEYS - 1);
            AtomicBoolean writing = new AtomicBoolean(true);
            ExecutorService pool = Executors.newFixedThreadPool(SCANNERS);
            try {
                List<Future<?>> scanners = new ArrayList<>();
                for (int s = 0; s < SCANNERS; s++) {
                    int batchRows = 16 << s;
                    scanners.add(pool.submit(() -> {
                        while (writing.get()) {
                            long floor = mergedUpTo.get();
                            Map<String, Long> offsets = scan(table, batchRows);
                            assertThat(offsets).hasSize(KEYS);
                            for (int key = 0; key < KEYS; key++) {
                                long newestMerged = floor - Math.floorMod(floor - key, KEYS);
                                assertThat(offsets.get("exp-" + key))
                                        .as("exp-%d not older than what was merged before the scan", key)
                                        .isGreaterThanOrEqualTo(newestMerged);
                            }
                            scans.incrementAndGet();
                        }
                        return null;
                    }));
                }
                long next = KEYS;
                for (int round = 0; round < 24; round++) {
                    long last = next + 49; // 50 keys updated a generation
                    TableFixtures.write(table, 0, next, last, KEYS);
                    next = last + 1;
                    if (round % 3 == 2) {
                        table.merges()
                                .pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(100, Long.MAX_VALUE));
                        mergedUpTo.set(last);
                    }
                    Thread.sleep(20);
                }
                writing.set(false);
                for (Future<?> scanner : scanners) {
                    scanner.get(); // rethrows a scanner's failed assertion
                }
            } finally {
                writing.set(false);
                pool.shutdownNow();
            }
        } // the table's allocator fails its close on any buffer a scan or a kept column left behind
        assertThat(scans.get()).as("scans that ran").isGreaterThanOrEqualTo(SCANNERS);
    }

    /** Each key's offset in one unfiltered scan; a key twice fails. */
    private static Map<String, Long> scan(RolloutTable table, int batchRows) throws Exception {
        Map<String, Long> offsets = new HashMap<>();
        try (RowStream stream = table.scan(
                ScanQuery.all()
                        .withColumns(List.of(RolloutSchema.RECORD_ID, RolloutSchema.SOURCE_OFFSET))
                        .withBatchRows(batchRows),
                TOPIC)) {
            VectorSchemaRoot root = stream.getVectorSchemaRoot();
            while (stream.loadNextBatch()) {
                VarCharVector ids = (VarCharVector) root.getVector(RolloutSchema.RECORD_ID);
                BigIntVector offsetsInLog = (BigIntVector) root.getVector(RolloutSchema.SOURCE_OFFSET);
                for (int i = 0; i < root.getRowCount(); i++) {
                    String id = ids.getObject(i).toString();
                    assertThat(offsets.put(id, offsetsInLog.get(i)))
                            .as("%s twice", id)
                            .isNull();
                }
            }
        }
        return offsets;
    }
}
