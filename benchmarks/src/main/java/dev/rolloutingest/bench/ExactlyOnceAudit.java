package dev.rolloutingest.bench;

import java.util.BitSet;

/**
 * The end of a run: every acknowledged record merged, counted once in the base (lost, duplicated, misrouted to another
 * table's), read by lance-core alone.
 */
final class ExactlyOnceAudit {
    private ExactlyOnceAudit() {}

    /**
     * Waits until every acknowledged record is merged, then counts each id in the base (of its own table, in a
     * many-tables run: a record in another table counts as misrouted).
     */
    static void verify(SustainedTarget table, BitSet acked, long produced, int tables) throws Exception {
        long deadline = System.nanoTime() + 600_000_000_000L;
        long drainStart = System.nanoTime();
        while (System.nanoTime() < deadline) {
            if (table.pendingTotal() == 0 && table.baseRows() >= acked.cardinality()) {
                break;
            }
            Thread.sleep(1_000);
        }
        System.out.printf("drained the rest in %.1f s%n", (System.nanoTime() - drainStart) / 1e9);
        BitSet seen = new BitSet();
        long[] counts = new long[4]; // rows, duplicated, unknown, misrouted
        java.util.Set<String> tablesSeen = new java.util.TreeSet<>();
        table.baseIds((name, id) -> {
            counts[0]++;
            tablesSeen.add(name);
            int index = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
            if (!acked.get(index)) {
                counts[2]++; // sent but not acknowledged: allowed (the send may have landed)
            }
            if (seen.get(index)) {
                counts[1]++;
            }
            if (tables > 0 && !name.equals(SustainedRig.experimentOf(index, tables))) {
                counts[3]++;
            }
            seen.set(index);
        });
        BitSet lost = (BitSet) acked.clone();
        lost.andNot(seen);
        System.out.printf(
                "end: %,d records acknowledged (%,d sent), %,d rows in the base%s: %d lost, %d duplicated%s"
                        + " (%d rows of sends that were not acknowledged)%n",
                acked.cardinality(),
                produced,
                counts[0],
                tables == 0 ? "" : "s of " + tablesSeen.size() + " tables",
                lost.cardinality(),
                counts[1],
                tables == 0 ? "" : ", " + counts[3] + " in another table than their own",
                counts[2]);
    }
}
