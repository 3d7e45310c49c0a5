package dev.rolloutingest.bench;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.maintenance.KeyIndex;
import dev.rolloutingest.table.merge.MergeJoin;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.storage.BatchReader;
import dev.rolloutingest.table.storage.ObjectStore;
import dev.rolloutingest.table.storage.ObjectStores;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.lance.WriteParams;

/**
 * The two ways a merge commit finds the base rows of its keys ({@link MergeJoin}: the record_id index or a scan)
 * against the base's size: a base of N rows (512-byte payloads, ids in shuffled order, the record_id BTREE over all
 * of it) is asked for the rows of S keys with each lookup in turn; per lookup its time and how much this process's
 * RSS rose during it. Sources are "random" (3/4 new ids and 1/4
 * rewrites, spread over the whole key range, as UUID-like ids are) or "appended" (new ids that all sort after
 * the base's). Run by {@code rollout-ingest bench merge-join}.
 */
public final class MergeJoinBench {
    private static final RolloutGenerator GENERATOR = new RolloutGenerator("join", 512, 3);
    private static final List<MergeJoin> JOINS = List.of(MergeJoin.INDEX, MergeJoin.SCAN);

    private final BufferAllocator allocator = new RootAllocator();
    private final PrintStream out;

    public MergeJoinBench(PrintStream out) {
        this.out = out;
    }

    public void run(Path dir, long[] baseSizes, int sourceRows, int commitsPerJoin) throws Exception {
        out.println("| base rows | source | join | commit time, median | RSS rise during the commit, max |");
        out.println("|---|---|---|---|---|");
        for (long baseRows : baseSizes) {
            String folder = "join-base-" + baseRows;
            String uri = dir.toAbsolutePath().resolve(folder).toString();
            writeBase(uri, baseRows);
            long nextId = baseRows;
            for (String kind : List.of("random", "appended")) {
                Map<MergeJoin, List<Long>> millis = new EnumMap<>(MergeJoin.class);
                Map<MergeJoin, Long> rssRise = new EnumMap<>(MergeJoin.class);
                for (int i = 0; i < commitsPerJoin; i++) {
                    for (MergeJoin join : JOINS) {
                        List<RolloutRow> source = source(kind, baseRows, nextId, sourceRows, i);
                        nextId += sourceRows;
                        long[] timed = commit(uri, join, source);
                        millis.computeIfAbsent(join, j -> new ArrayList<>()).add(timed[0]);
                        rssRise.merge(join, timed[1], Math::max);
                    }
                }
                for (MergeJoin join : JOINS) {
                    out.printf(
                            "| %,d | %,d %s | %s | %d ms | %d MiB |%n",
                            baseRows, sourceRows, kind, join.tag(), median(millis.get(join)), rssRise.get(join) >> 20);
                }
            }
            try (ObjectStore store = ObjectStores.open(TableLocation.local(dir.toAbsolutePath()))) {
                store.delete(folder);
            }
        }
    }

    private void writeBase(String uri, long rows) throws Exception {
        for (long first = 0; first < rows; first += 200_000) {
            List<RolloutRow> batch = rows(first, Math.min(rows, first + 200_000), 0);
            Collections.shuffle(batch, new Random(first));
            try (VectorSchemaRoot root = ArrowRows.toRoot(allocator, batch);
                    BatchReader reader = new BatchReader(allocator, root)) {
                Dataset.write()
                        .allocator(allocator)
                        .reader(reader)
                        .uri(uri)
                        .mode(first == 0 ? WriteParams.WriteMode.CREATE : WriteParams.WriteMode.APPEND)
                        .execute()
                        .close();
            }
        }
        try (Dataset base = Dataset.open(uri, allocator)) {
            KeyIndex.create(base, true);
        }
    }

    private static String id(long n) {
        return String.format("id-%012d", n);
    }

    private static List<RolloutRow> rows(long first, long end, long offsetBase) {
        List<RolloutRow> rows = new ArrayList<>();
        for (long n = first; n < end; n++) {
            Rollout rollout = GENERATOR.rollout(n, 1);
            rollout.setRecordId(id(n));
            rows.add(new RolloutRow(rollout, 0, offsetBase + n, Instant.now()));
        }
        return rows;
    }

    /** Source rows sorted by record_id, as the merge round sends them. */
    private static List<RolloutRow> source(String kind, long baseRows, long nextId, int sourceRows, int seed) {
        List<RolloutRow> rows;
        if (kind.equals("appended")) {
            rows = rows(nextId, nextId + sourceRows, 1L << 40);
        } else {
            // new ids interleaved with the base's (a suffix sorts them between base ids), 1/4 rewrites
            Random random = new Random(seed);
            rows = new ArrayList<>();
            Set<String> seen = new HashSet<>();
            for (int i = 0; rows.size() < sourceRows; i++) {
                long n = (long) (random.nextDouble() * baseRows);
                String recordId = i % 4 == 0 ? id(n) : id(n) + "-" + (nextId + i);
                if (seen.add(recordId)) {
                    Rollout rollout = GENERATOR.rollout(n, 2);
                    rollout.setRecordId(recordId);
                    rows.add(new RolloutRow(rollout, 0, (1L << 40) + nextId + i, Instant.now()));
                }
            }
        }
        rows.sort(Comparator.comparing(r -> r.rollout().getRecordId().toString()));
        return rows;
    }

    /** Returns {milliseconds, RSS rise in bytes} of finding the base rows of the source's keys. */
    private long[] commit(String uri, MergeJoin join, List<RolloutRow> source) throws Exception {
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong peak = new AtomicLong();
        List<String> keys =
                source.stream().map(r -> r.rollout().getRecordId().toString()).toList();
        try (Dataset base = Dataset.open(uri, allocator)) {
            long before = rss();
            peak.set(before);
            Thread sampler = new Thread(() -> {
                while (!done.get()) {
                    peak.accumulateAndGet(rss(), Math::max);
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            sampler.setDaemon(true);
            sampler.start();
            long started = System.nanoTime();
            try {
                join.find(base, keys);
            } finally {
                done.set(true);
                sampler.join();
            }
            return new long[] {(System.nanoTime() - started) / 1_000_000, peak.get() - before};
        }
    }

    static long median(List<Long> values) {
        List<Long> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    private static long rss() {
        try {
            String[] fields =
                    Files.readString(Path.of("/proc/self/statm")).trim().split(" ");
            return Long.parseLong(fields[1]) * 4096;
        } catch (Exception e) {
            return 0;
        }
    }
}
