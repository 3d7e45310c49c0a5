package dev.rolloutingest.table.reads;

import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.reads.StreamPass.Keep;
import dev.rolloutingest.table.rows.Filters;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.LanceIo;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * The passes a {@link RowStream} runs for a scan or a tail: which scans of the base and of which pending generations,
 * with which filters, keeping which rows. Chosen so that lance's filters leave out as many rows as they can and the
 * rows checked in Java are few.
 */
final class PassPlanner {
    /** The most pending keys a filter names; past it every base row is checked in Java instead. */
    static final int KEYS_IN_FILTER_MAX = 100_000;

    private final LanceIo lance;
    private final ShardPartitions partitions;

    /** Per open base handle (one version), whether it may hold deletes; a newer version is a new handle. */
    private final Map<Dataset, Boolean> deletesByVersion = Collections.synchronizedMap(new WeakHashMap<>());

    PassPlanner(LanceIo lance, ShardPartitions partitions) {
        this.lance = lance;
        this.partitions = partitions;
    }

    /** A scan of base + pending: the base passes, then each pending generation's values. */
    List<StreamPass> scan(ReadCatalog.Snapshot snapshot, String filter, PendingKeys pending) {
        List<StreamPass> passes = base(snapshot.base, snapshot.deletes != null, null, filter, pending, false);
        snapshot.pendingByShard
                .values()
                .forEach(shard -> shard.forEach(
                        generation -> passes.add(new StreamPass(generation.listed(), filter, Keep.VALUES))));
        return passes;
    }

    /** A scan of one base version alone: nothing pending counts. */
    List<StreamPass> scanVersion(Dataset version, String filter) {
        return base(version, false, null, filter, PendingKeys.none(), false);
    }

    /**
     * A tail: the base rows in {@code baseRange} (none when null), then the pending generations with offsets in
     * (cursor, upTo] of their partition.
     */
    List<StreamPass> tail(
            ReadCatalog.Snapshot snapshot,
            String topic,
            TailCursor from,
            Map<Integer, Long> upTo,
            String baseRange,
            String filter,
            PendingKeys pending) {
        List<StreamPass> passes = baseRange == null
                ? new ArrayList<>()
                : base(snapshot.base, snapshot.deletes != null, baseRange, filter, pending, true);
        addTailPending(passes, snapshot, topic, from, upTo, filter);
        return passes;
    }

    /**
     * The passes over the base. A scan of every row (no filter, no range) reads each base row once in one pass and
     * drops, in Java, the few a newer pending row replaces: a 64-bit hash of each record_id against the pending keys'
     * (a filter naming the keys costs lance more to plan and evaluate than the check, and a second pass to read their
     * base rows). Otherwise the bulk pass is lance's alone: its filter leaves out the keys that have a pending row and
     * the rows that may be deletes, so its batches pass through as lance returns them, no row looked at; the base rows
     * of pending keys are read apart by their order columns only, to learn which are newer than the key's newest
     * pending row (a key that moved across partitions: rare), and those few then read whole. Either way the possible
     * deletes (a delete row has an empty experiment and rollout_id; a base version without such rows, known once per
     * version, needs no such term) are read in a pass where each row is checked. A tail hands deletes over whatever
     * the filters. The deletes kept beside the base ({@code deletes}) are read as the base's possible deletes were:
     * those of pending keys to order them against the pending rows, and in a tail those in its range.
     */
    private List<StreamPass> base(
            Dataset base, boolean deletes, String range, String filter, PendingKeys pending, boolean tail) {
        List<StreamPass> passes = new ArrayList<>();
        if (range == null && filter == null && !tail && !pending.isEmpty()) {
            // a scan of every row: one pass sees each base row, and Java drops the replaced ones by key (a filter
            // naming the pending keys costs more to plan and evaluate, plus a second pass to read their base rows)
            String candidates = mayHoldDeletes(base) ? Tombstones.CANDIDATES : null;
            passes.add(new StreamPass(null, candidates == null ? null : "NOT (" + candidates + ")", Keep.UNREPLACED));
            if (candidates != null) {
                checked(passes, candidates, null, false, false);
            }
            if (deletes) {
                // every delete beside the base: one newer than a key's pending rows hides them
                passes.add(new StreamPass(null, null, Keep.VALUES).overDeletes());
            }
            return passes;
        }
        if (pending.size() > KEYS_IN_FILTER_MAX) {
            checked(passes, range, filter, tail, false); // too many keys to name: one pass, every row checked
            if (deletes) {
                List<StreamPass> beside = new ArrayList<>();
                checked(beside, range, filter, tail, false);
                beside.forEach(pass -> passes.add(pass.overDeletes()));
            }
            return passes;
        }
        String pendingKeys = pending.isEmpty() ? null : Filters.recordIdInOneList(pending.keys());
        String candidates = mayHoldDeletes(base) ? Tombstones.CANDIDATES : null;
        String rest = candidates == null
                ? pendingKeys
                : pendingKeys == null ? candidates : "(" + candidates + ") OR (" + pendingKeys + ")";
        boolean namesKeys = pendingKeys != null;
        String notPending = pendingKeys == null ? null : "NOT (" + pendingKeys + ")";
        passes.add(new StreamPass(
                null, and(and(range, filter), rest == null ? null : "NOT (" + rest + ")"), Keep.ALL, namesKeys));
        if (candidates != null) {
            checked(passes, and(and(range, candidates), notPending), filter, tail, namesKeys);
        }
        if (deletes && tail) {
            // the deletes beside the base in the range, as the base's possible deletes are read (a scan shows none:
            // only those of pending keys count, which the mark below reads)
            List<StreamPass> beside = new ArrayList<>();
            checked(beside, and(range, notPending), filter, tail, namesKeys);
            beside.forEach(pass -> passes.add(pass.overDeletes()));
        }
        if (pendingKeys != null) {
            // every base row of a pending key, whatever the range and filters: then no lookup is needed later
            passes.add(new StreamPass(null, pendingKeys, Keep.MARK, true));
            if (deletes) {
                passes.add(new StreamPass(null, pendingKeys, Keep.MARK, true).overDeletes());
            }
            List<StreamPass> newer = new ArrayList<>();
            checked(newer, range, filter, tail, false);
            newer.forEach(pass -> passes.add(new StreamPass(null, pass.filter(), pass.keep(), false, true)));
            if (deletes && tail) {
                // a delete newer than its key's pending rows is the key's newest row: a tail hands it over
                newer.forEach(pass ->
                        passes.add(new StreamPass(null, pass.filter(), pass.keep(), false, true).overDeletes()));
            }
        }
        return passes;
    }

    /** Whether the base version holds any row that may be a delete: one scan of two columns per version, kept. */
    private boolean mayHoldDeletes(Dataset base) {
        Boolean known = deletesByVersion.get(base);
        if (known != null) {
            return known;
        }
        boolean any;
        try (LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.RECORD_ID))
                        .filter(Tombstones.CANDIDATES)
                        .limit(1)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            any = false;
            while (!any && reader.loadNextBatch()) {
                any = reader.getVectorSchemaRoot().getRowCount() > 0;
            }
        } catch (Exception e) {
            throw new RolloutTableException("Table " + lance.location() + ": scan failed: " + e.getMessage(), e);
        }
        deletesByVersion.put(base, any);
        return any;
    }

    /** Passes over the base rows {@code where} selects, each row checked: values matching the filter, deletes. */
    private static void checked(List<StreamPass> passes, String where, String filter, boolean tail, boolean namesKeys) {
        if (!tail) {
            passes.add(new StreamPass(null, and(where, filter), Keep.VALUES, namesKeys));
        } else if (filter == null) {
            passes.add(new StreamPass(null, where, Keep.BOTH, namesKeys));
        } else {
            passes.add(new StreamPass(null, and(where, filter), Keep.VALUES, namesKeys));
            passes.add(new StreamPass(null, and(where, Tombstones.CANDIDATES), Keep.DELETES, namesKeys));
        }
    }

    /** The pending generations with offsets in (cursor, upTo] of their partition, filtered to that range. */
    private void addTailPending(
            List<StreamPass> passes,
            ReadCatalog.Snapshot snapshot,
            String topic,
            TailCursor from,
            Map<Integer, Long> upTo,
            String filter) {
        for (Map.Entry<String, List<ReadCatalog.Pending>> shard : snapshot.pendingByShard.entrySet()) {
            int partition = partitions.partition(topic, shard.getKey());
            if (partition < 0 || !upTo.containsKey(partition)) {
                continue; // a shard of another topic, or of a partition outside this tail's share
            }
            long after = from.offset(partition);
            long end = upTo.getOrDefault(partition, after);
            for (ReadCatalog.Pending generation : shard.getValue()) {
                GenerationCatalog.Listed listed = generation.listed();
                if (listed.lastOffset() <= after || listed.firstOffset() > end) {
                    continue;
                }
                String range = listed.firstOffset() > after && listed.lastOffset() <= end
                        ? null
                        : RolloutSchema.SOURCE_OFFSET + " > " + after + " AND " + RolloutSchema.SOURCE_OFFSET + " <= "
                                + end;
                if (filter == null) {
                    passes.add(new StreamPass(listed, range, Keep.BOTH));
                } else {
                    passes.add(new StreamPass(listed, and(range, filter), Keep.VALUES));
                    passes.add(new StreamPass(listed, and(range, Tombstones.CANDIDATES), Keep.DELETES));
                }
            }
        }
    }

    static String and(String a, String b) {
        if (a == null) {
            return b;
        }
        return b == null ? a : a + " AND (" + b + ")";
    }
}
