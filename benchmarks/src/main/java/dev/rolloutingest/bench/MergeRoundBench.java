package dev.rolloutingest.bench;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.maintenance.KeyIndex;
import dev.rolloutingest.table.maintenance.TableMaintenance;
import dev.rolloutingest.table.merge.BaseKeys;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.merge.TableMerges;
import dev.rolloutingest.table.rows.ArrowRows;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.BatchReader;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.lance.Dataset;
import org.lance.Fragment;
import org.lance.FragmentMetadata;
import org.lance.Transaction;
import org.lance.WriteParams;
import org.lance.operation.Append;

/**
 * What a merge round costs as the base grows: on a MemWAL base of N rows (UUID-like record_ids, built with plain
 * appends and given the record_id index), rounds that fold 16 generations of 4 shards (1,000 rows each) whose
 * keys are all new (appended with adoption, appended without it, or all joined as before), all updates of keys merged
 * in the last four rounds (a rollout scored after it landed), 1 % present or 50 % present (random base keys), or 10 %
 * of its rows deletes of keys the base holds; each round timed from plan to commit (plan, prepare, the
 * commits), with the key filter already built (its build is timed once, apart) and the record_id index brought up
 * to date between rounds, untimed, as the merge-worker's upkeep does every few seconds. Beside each round the floor: a
 * plain lance-core Append commit of as many rows on the same base, just before it. And the same rounds with the append path off
 * (every row through the merge-insert join), the cost before it. Run by {@code rollout-ingest bench merge-round}.
 */
public final class MergeRoundBench {
    private static final String TOPIC = "rollouts";
    private static final int SHARDS = 4;
    private static final int GENERATIONS_PER_SHARD = 4;
    private static final int ROWS_PER_GENERATION = 1_000;
    private static final int ROUND_ROWS = SHARDS * GENERATIONS_PER_SHARD * ROWS_PER_GENERATION;

    private final PrintStream out;
    private final RolloutGenerator generator;
    /** The base's rows: their payload may be smaller than the rounds' (a base larger than the disk otherwise). */
    private final RolloutGenerator baseGenerator;

    private final BufferAllocator allocator = new RootAllocator();
    private final long[] nextOffset = new long[SHARDS];
    private long nextNewKey;
    /** The new keys of the last rounds, oldest first: what an update of a just-merged rollout picks from. */
    private final ArrayDeque<String> recentKeys = new ArrayDeque<>();

    private static final int RECENT_KEYS = 4 * ROUND_ROWS;

    /** The path before the key filter, every key through the join, is timed up to this base: it grows with it. */
    private static final long JOIN_ONLY_MAX_BASE_ROWS = 10_000_000;

    /**
     * The cases by name: share of keys present in the base, share of deletes of present keys, updates of recent keys
     * (1) or not.
     */
    public static final Map<String, double[]> CASES = casesByName();

    private static Map<String, double[]> casesByName() {
        Map<String, double[]> cases = new java.util.LinkedHashMap<>();
        cases.put("new", new double[] {0, 0, 0});
        cases.put("recent", new double[] {0, 0, 1});
        cases.put("old-1", new double[] {0.01, 0, 0});
        cases.put("old-50", new double[] {0.5, 0, 0});
        cases.put("deletes", new double[] {0, DELETED, 0});
        return java.util.Collections.unmodifiableMap(cases);
    }

    /** The file a kept base is marked complete with (beside its _versions, which lance ignores). */
    private static final String KEPT_MARKER = "bench-base-complete";

    private final long keyAddressesBytes;
    private final long keyAddressesFileMaxBytes;
    /** Bases kept between runs: written once, used again (100M rows take ~15 minutes to write and index). */
    private final boolean keepBase;

    private final boolean compactKeptBase;
    /** Rows of each of the base's fragments. */
    private final int baseRowsPerFragment;

    /** The cases run ({@link #CASES}' names). */
    private final java.util.Set<String> cases;

    /**
     * @param basePayloadBytes the payload of the base's rows (the rounds' rows and their floor have {@code
     *     payloadBytes})
     * @param keyAddressesBytes the committer's book of key addresses ({@code rollout.merge.key.addresses.bytes})
     * @param keyAddressesFileMaxBytes its file of every key's address ({@code
     *     rollout.merge.key.addresses.file.max.bytes}; 0 = none)
     * @param keepBase keep each base and use it again in the next run
     * @param cases the cases to run, by name ({@link #CASES})
     * @param baseRowsPerFragment rows of each fragment of the base
     */
    public MergeRoundBench(
            PrintStream out,
            int payloadBytes,
            int basePayloadBytes,
            long keyAddressesBytes,
            long keyAddressesFileMaxBytes,
            boolean keepBase,
            boolean compactKeptBase,
            java.util.Set<String> cases,
            int baseRowsPerFragment) {
        this.out = out;
        this.compactKeptBase = compactKeptBase;
        this.baseRowsPerFragment = baseRowsPerFragment;
        this.keepBase = keepBase;
        for (String name : cases) {
            if (!CASES.containsKey(name)) {
                throw new IllegalArgumentException("no case " + name + "; the cases: " + CASES.keySet());
            }
        }
        this.cases = cases;
        if (keepBase) {
            // a kept base holds the new keys of earlier runs: this run's are drawn from elsewhere in the key space
            this.nextNewKey = new Random().nextLong() >>> 1;
        }
        this.keyAddressesBytes = keyAddressesBytes;
        this.keyAddressesFileMaxBytes = keyAddressesFileMaxBytes;
        this.generator = new RolloutGenerator("round", payloadBytes, 11);
        this.baseGenerator = new RolloutGenerator("round", basePayloadBytes, 11);
    }

    /** The n-th key of the base: spread over the whole key range, as UUIDs are, and reproducible. */
    private static String baseKey(long n) {
        Random random = new Random(n * 0x9E3779B97F4A7C15L);
        return new UUID(random.nextLong(), random.nextLong()).toString();
    }

    /** A key the base does not hold, spread over the same range as the base's (a UUID from other seeds). */
    private String newKey() {
        String key = baseKey(~(nextNewKey++));
        recentKeys.addLast(key);
        if (recentKeys.size() > RECENT_KEYS) {
            recentKeys.removeFirst();
        }
        return key;
    }

    public void run(Path dir, long[] baseSizes, int rounds) throws Exception {
        out.printf(
                "rounds of %,d rows: %d shards x %d generations x %,d rows; median of %d rounds each%n",
                ROUND_ROWS, SHARDS, GENERATIONS_PER_SHARD, ROWS_PER_GENERATION, rounds);
        out.println("| base rows | keys present | path | round (plan+prepare+commit), median | of which commits |"
                + " plain Append of the same rows (floor) | round / floor |");
        out.println("|---|---|---|---|---|---|---|");
        Map<Long, Long> allNewAppendRound = new TreeMap<>();
        for (long baseRows : baseSizes) {
            TableLocation location = TableLocation.local(
                    dir.toAbsolutePath().resolve("round-base-" + baseRows + (keepBase ? "" : "-" + UUID.randomUUID())));
            Path kept = Path.of(location.uri()).resolve(KEPT_MARKER);
            if (keepBase && java.nio.file.Files.exists(kept)) {
                out.printf("base of %,d rows kept from an earlier run (%s)%n", baseRows, location);
                // the earlier run's rounds merged offsets of these shards: this run's go on above them
                try (Dataset base = Dataset.open(location.uri(), allocator)) {
                    Map<String, Long> watermarks = MemWalWatermarks.read(base);
                    for (int p = 0; p < SHARDS; p++) {
                        nextOffset[p] = Math.max(nextOffset[p], watermarks.getOrDefault(ShardId.of(TOPIC, p + 1), 0L));
                    }
                }
                if (compactKeptBase) {
                    compact(location);
                }
            } else {
                long built = System.nanoTime();
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())
                        .close();
                writeBase(location, baseRows);
                try (Dataset base = Dataset.open(location.uri(), allocator)) {
                    KeyIndex.create(base, true);
                }
                if (keepBase) {
                    java.nio.file.Files.createFile(kept); // written whole: a run cut short leaves none
                }
                out.printf(
                        "base of %,d rows in fragments of %,d written and indexed in %d s%n",
                        baseRows, baseRowsPerFragment, (System.nanoTime() - built) / 1_000_000_000);
            }
            reportFilter(location, baseRows);
            for (Map.Entry<String, double[]> named : CASES.entrySet()) {
                if (!cases.contains(named.getKey())) {
                    continue;
                }
                double[] mix = named.getValue();
                double present = mix[0];
                double deleted = mix[1];
                boolean recent = mix[2] > 0;
                for (String path : List.of("append + join", "append, no adoption", "join only")) {
                    boolean append = !path.equals("join only");
                    if ((present > 0 || deleted > 0 || recent) && !path.equals("append + join")) {
                        continue; // the other paths are compared on all-new rounds
                    }
                    if (!append && baseRows > JOIN_ONLY_MAX_BASE_ROWS) {
                        out.printf(
                                "| %,d | 0 %% | join only | (not run above %,d base rows: ~20 s a round at 10M) |"
                                        + " | | |%n",
                                baseRows, JOIN_ONLY_MAX_BASE_ROWS);
                        continue;
                    }
                    TableSettings settings = TableSettings.DEFAULTS
                            .with(TableSettings.MERGE_APPEND_NEW_KEYS, append)
                            .with(TableSettings.MERGE_ADOPT_GENERATIONS, !path.equals("append, no adoption"))
                            .with(TableSettings.MERGE_ADOPT_MIN_ROWS, 0)
                            .with(TableSettings.MERGE_KEY_ADDRESSES_BYTES, keyAddressesBytes)
                            .with(TableSettings.MERGE_KEY_ADDRESSES_FILE_MAX_BYTES, keyAddressesFileMaxBytes)
                            .with(
                                    TableSettings.MERGE_KEY_ADDRESSES_FILE_DIR,
                                    dir.toAbsolutePath()
                                            .resolve("key-addresses")
                                            .toString());
                    if (recent) {
                        // the keys it updates land first as rollouts do, in rounds of new keys (untimed) with the
                        // default settings: generations this small are not adopted, so each round's rows are written
                        // together, one fragment a round
                        TableSettings landing = settings.with(
                                TableSettings.MERGE_ADOPT_MIN_ROWS, TableSettings.DEFAULTS.mergeAdoptMinRows());
                        try (RolloutTable table = RolloutTable.open(location, landing, new SimpleMeterRegistry())) {
                            for (int r = 0; r < RECENT_KEYS / ROUND_ROWS; r++) {
                                round(table, baseRows, 0, 0, false);
                            }
                        }
                    }
                    SimpleMeterRegistry meters = new SimpleMeterRegistry();
                    try (RolloutTable table = RolloutTable.open(location, settings, meters)) {
                        List<Long> floorMs = new ArrayList<>();
                        floorMs.add(plainAppend(location));
                        table.maintenance().optimizeKeyIndex(); // as the merge-worker's upkeep does every few seconds
                        // warm-up: builds the key filter (it reads the floor's fragments too), opens the index
                        round(table, baseRows, present, deleted, recent);
                        // a warm-up that met old keys builds the file of every key's address in the background: as
                        // the filter, built before the rounds are timed
                        table.merges().keyAddressFileBuild().join();
                        io.micrometer.core.instrument.Timer fileBuilds = meters.get(
                                        "rollout.merge.key.addresses.file.builds")
                                .timer();
                        if (fileBuilds.count() > 0) {
                            out.printf(
                                    "  (file of every key's address built in %.0f ms, once)%n",
                                    fileBuilds.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS));
                        }
                        table.maintenance().optimizeKeyIndex();
                        io.micrometer.core.instrument.Timer appendTimer = meters.get("rollout.merge.phase")
                                .tag("phase", "append")
                                .timer();
                        long warmAppends = appendTimer.count();
                        io.micrometer.core.instrument.Timer finds =
                                meters.get("rollout.merge.key.addresses.find").timer();
                        long warmFinds = finds.count();
                        double warmFindMs = finds.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS);
                        io.micrometer.core.instrument.Counter unread = meters.get(
                                        "rollout.merge.key.addresses.rows.trusted")
                                .counter();
                        io.micrometer.core.instrument.Counter taken = meters.get(
                                        "rollout.merge.key.addresses.rows.taken")
                                .counter();
                        double warmUnread = unread.count();
                        double warmTaken = taken.count();
                        double warmAppendMs = appendTimer.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS);
                        List<Long> roundMs = new ArrayList<>();
                        List<Long> commitMs = new ArrayList<>();
                        for (int r = 0; r < rounds; r++) {
                            // each round beside a floor of the same moment (the machine's speed drifts); the floor's
                            // keys are read into the committer's filter and book untimed, as they are not the round's
                            floorMs.add(plainAppend(location));
                            table.merges().catchUp();
                            table.maintenance()
                                    .optimizeKeyIndex(); // not timed: the merge-worker's upkeep, between rounds
                            long[] timed = round(table, baseRows, present, deleted, recent);
                            roundMs.add(timed[0]);
                            commitMs.add(timed[1]);
                        }
                        long round = MergeJoinBench.median(roundMs);
                        double appendMean = appendTimer.count() == warmAppends
                                ? 0
                                : (appendTimer.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS) - warmAppendMs)
                                        / (appendTimer.count() - warmAppends);
                        long floor = MergeJoinBench.median(floorMs);
                        if (path.equals("append + join") && present == 0 && deleted == 0 && !recent) {
                            allNewAppendRound.put(baseRows, round);
                        }
                        out.printf(
                                "| %,d | %s | %s | %d ms | %d ms (append, mean: %.0f ms) | %d ms | %.1fx |%n",
                                baseRows,
                                recent
                                        ? "100 % updates of keys merged in the last 4 rounds"
                                        : deleted > 0
                                                ? String.format("%.0f %% deletes of present keys", deleted * 100)
                                                : String.format("%.0f %%", present * 100),
                                path,
                                round,
                                MergeJoinBench.median(commitMs),
                                appendMean,
                                floor,
                                (double) round / Math.max(1, floor));
                        if (finds.count() > warmFinds) {
                            out.printf(
                                    "  (of which finding replaced rows through the book of key addresses: %.0f ms a"
                                            + " round, mean; rows a round replaced unread %.0f, taken %.0f)%n",
                                    (finds.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS) - warmFindMs)
                                            / (finds.count() - warmFinds),
                                    (unread.count() - warmUnread) / rounds,
                                    (taken.count() - warmTaken) / rounds);
                        }
                        // every commit lists the base's fragments: the ratio follows their count (rounds adopt each
                        // generation as one, the bench never compacts), so each case says what it ran on
                        try (Dataset base = Dataset.open(location.uri(), allocator)) {
                            out.printf(
                                    "  (base of %,d fragments after the case's rounds)%n",
                                    base.getFragments().size());
                        }
                    }
                }
            }
            List<Path> removed = new ArrayList<>(List.of(dir.toAbsolutePath().resolve("key-addresses")));
            if (!keepBase) {
                removed.add(Path.of(location.uri()));
            }
            for (Path written : removed) {
                if (!java.nio.file.Files.exists(written)) {
                    continue;
                }
                try (var files = java.nio.file.Files.walk(written)) {
                    files.sorted(java.util.Comparator.reverseOrder())
                            .forEach(f -> f.toFile().delete());
                }
            }
        }
        if (allNewAppendRound.size() > 1) {
            long smallest = allNewAppendRound.values().iterator().next();
            allNewAppendRound.forEach((rows, ms) -> out.printf(
                    "all-new round at %,d base rows: %.2fx the round at the smallest base%n",
                    rows, (double) ms / Math.max(1, smallest)));
        }
    }

    /** The committer's key filter of this base: build time and memory. */
    private void reportFilter(TableLocation location, long baseRows) {
        LanceIo lance = new LanceIo(location, allocator, TableSettings.DEFAULTS.readCacheBytes());
        try (Dataset base = Dataset.open(location.uri(), allocator)) {
            BaseKeys keys = new BaseKeys(lance, new SimpleMeterRegistry()); // as a table's committer builds it
            long started = System.nanoTime();
            keys.catchUp(base);
            long ms = (System.nanoTime() - started) / 1_000_000;
            out.printf(
                    "key filter of %,d base keys: built in %d ms, %.1f MiB (%.2f bytes per base key, sized for %,d)%n",
                    baseRows,
                    ms,
                    keys.sizeBytes() / 1048576.0,
                    (double) keys.sizeBytes() / baseRows,
                    Math.max(BaseKeys.MIN_CAPACITY, baseRows * 2));
        } finally {
            lance.close();
        }
    }

    /**
     * Plain appends of the base rows in fragments of {@link #baseRowsPerFragment} rows: what the merge-worker's
     * compaction leaves (rollout.compaction.target.rows.per.fragment), the adopted and written fragments of the rounds
     * since on top.
     */
    private void writeBase(TableLocation location, long rows) throws Exception {
        int slice = baseRowsPerFragment;
        for (long first = 0; first < rows; first += slice) {
            List<RolloutRow> batch = new ArrayList<>();
            for (long n = first; n < Math.min(rows, first + slice); n++) {
                Rollout rollout = baseGenerator.rollout(n, 1);
                rollout.setRecordId(baseKey(n));
                batch.add(new RolloutRow(rollout, 0, n, Instant.now()));
            }
            try (VectorSchemaRoot root = ArrowRows.toRoot(allocator, batch);
                    BatchReader reader = new BatchReader(allocator, root)) {
                Dataset.write()
                        .allocator(allocator)
                        .reader(reader)
                        .uri(location.uri())
                        .mode(WriteParams.WriteMode.APPEND)
                        .execute()
                        .close();
            }
        }
    }

    /** The share of a round's rows that are deletes of keys the base holds, in the deletes case. */
    private static final double DELETED = 0.1;

    /** Compacts the kept base as the merge-worker's upkeep does (compaction, then the key index rebuilt). */
    private void compact(TableLocation location) {
        long started = System.nanoTime();
        try (RolloutTable table = RolloutTable.open(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            TableMaintenance.CompactionResult compacted = table.maintenance().compact(baseRowsPerFragment);
            long millis = (System.nanoTime() - started) / 1_000_000;
            try (Dataset base = Dataset.open(location.uri(), allocator)) {
                out.printf(
                        "kept base compacted from %,d to %,d fragments, its key index rebuilt, in %,d ms; the base's"
                                + " indexes now: %s%n",
                        compacted.fragmentsBefore(),
                        compacted.fragmentsAfter(),
                        millis,
                        base.getIndexes().stream().map(i -> i.name()).distinct().toList());
            }
        }
    }

    /** A base row not drawn before in this round. */
    private static long distinctBaseRow(Random random, long baseRows, Set<Long> drawn) {
        while (true) {
            long row = (long) (random.nextDouble() * baseRows);
            if (drawn.add(row)) {
                return row;
            }
        }
    }

    /**
     * One round: 16 generations written (not timed), then plan, prepare and commit timed. {@code recent}: every row
     * an update of a distinct key among the new keys of the last rounds.
     */
    private long[] round(RolloutTable table, long baseRows, double present, double deleted, boolean recent) {
        Random random = new Random(nextNewKey);
        List<String> updated = new ArrayList<>(recentKeys);
        Collections.shuffle(updated, random);
        Iterator<String> updates = updated.iterator();
        // a base key drawn twice would be one row in the base: every row of a round is a key of its own
        Set<Long> drawn = new HashSet<>();
        List<String> shards = new ArrayList<>();
        for (int p = 0; p < SHARDS; p++) {
            shards.add(ShardId.of(TOPIC, p + 1));
            for (int g = 0; g < GENERATIONS_PER_SHARD; g++) {
                List<RolloutRow> rows = new ArrayList<>();
                long first = nextOffset[p];
                for (int i = 0; i < ROWS_PER_GENERATION; i++) {
                    if (deleted > 0 && random.nextDouble() < deleted) {
                        Instant now = Instant.now();
                        String key = baseKey(distinctBaseRow(random, baseRows, drawn));
                        rows.add(new RolloutRow(Tombstones.of(key, now), p + 1, first + i, now));
                        continue;
                    }
                    Rollout rollout = generator.rollout(first + i, 2);
                    rollout.setRecordId(
                            recent
                                    ? updates.next()
                                    : random.nextDouble() < present
                                            ? baseKey(distinctBaseRow(random, baseRows, drawn))
                                            : newKey());
                    rows.add(new RolloutRow(rollout, p + 1, first + i, Instant.now()));
                }
                nextOffset[p] += ROWS_PER_GENERATION;
                table.generations()
                        .write(TOPIC, p + 1, first, first + ROWS_PER_GENERATION - 1, rows, rows.size() * 600L);
            }
        }
        long started = System.nanoTime();
        // every shard asked for at once: one round, as the merge-worker's scheduler makes it under load
        table.merges()
                .requestAll(shards.stream()
                        .map(s -> MergeRequest.of(s).limits(0, 0))
                        .toList())
                .forEach(CompletableFuture::join); // a failed pass fails the bench
        long total = (System.nanoTime() - started) / 1_000_000;
        TableMerges.RoundSummary round = table.merges().lastRound();
        if (round.shards() != shards.size()) {
            throw new IllegalStateException("the passes took " + round.round() + " rounds, not one");
        }
        if (round.rows() != ROUND_ROWS) {
            throw new IllegalStateException("the round merged " + round.rows() + " rows, not " + ROUND_ROWS);
        }
        return new long[] {total, round.commitMs()};
    }

    /** The floor: the same number of new rows written as fragments and committed with a plain Append. */
    private long plainAppend(TableLocation location) throws Exception {
        List<RolloutRow> rows = new ArrayList<>();
        for (int i = 0; i < ROUND_ROWS; i++) {
            Rollout rollout = generator.rollout(i, 3);
            rollout.setRecordId(baseKey(~(nextNewKey++))); // new, but not a merged key an update picks
            rows.add(new RolloutRow(rollout, 0, i, Instant.now()));
        }
        rows.sort((a, b) -> a.rollout()
                .getRecordId()
                .toString()
                .compareTo(b.rollout().getRecordId().toString()));
        try (VectorSchemaRoot root = ArrowRows.toRoot(allocator, rows)) {
            long started = System.nanoTime();
            try (Dataset base = Dataset.open(location.uri(), allocator);
                    ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
                Data.exportArrayStream(allocator, new BatchReader(allocator, root), stream);
                List<FragmentMetadata> fragments =
                        Fragment.create(location.uri(), stream, new WriteParams.Builder().build());
                try (Transaction tx = new Transaction.Builder()
                        .readVersion(base.version())
                        .operation(Append.builder().fragments(fragments).build())
                        .build()) {
                    base.commitTransaction(tx).close();
                }
            }
            return (System.nanoTime() - started) / 1_000_000;
        }
    }
}
