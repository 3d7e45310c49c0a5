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
        Tally tally = new Tally(acked);
        long[] misrouted = new long[1];
        java.util.Set<String> tablesSeen = new java.util.TreeSet<>();
        table.baseIds((name, id) -> {
            tablesSeen.add(name);
            int index = tally.add(id);
            if (tables > 0 && !name.equals(SustainedRig.experimentOf(index, tables))) {
                misrouted[0]++;
            }
        });
        System.out.printf(
                "end: %,d records acknowledged (%,d sent), %,d rows in the base%s: %d lost, %d duplicated%s"
                        + " (%d rows of sends that were not acknowledged)%n",
                acked.cardinality(),
                produced,
                tally.rows(),
                tables == 0 ? "" : "s of " + tablesSeen.size() + " tables",
                tally.lost(),
                tally.duplicated(),
                tables == 0 ? "" : ", " + misrouted[0] + " in another table than their own",
                tally.unacknowledged());
    }

    /**
     * The record_ids read back from a table, counted against the acknowledged records' indexes (an id ends in
     * {@code -<index>}, as RolloutGenerator names them): rows, duplicated, not acknowledged, and at the end lost.
     */
    static final class Tally {
        private final BitSet acked;
        private final BitSet seen = new BitSet();
        private long rows;
        private long duplicated;
        private long unacknowledged;

        Tally(BitSet acked) {
            this.acked = acked;
        }

        /** Counts one id read; returns its index. */
        int add(String id) {
            int index = Integer.parseInt(id.substring(id.lastIndexOf('-') + 1));
            rows++;
            if (!acked.get(index)) {
                unacknowledged++; // sent but not acknowledged: allowed (the send may have landed)
            }
            if (seen.get(index)) {
                duplicated++;
            }
            seen.set(index);
            return index;
        }

        long rows() {
            return rows;
        }

        long duplicated() {
            return duplicated;
        }

        long unacknowledged() {
            return unacknowledged;
        }

        /** Acknowledged records not read. */
        int lost() {
            BitSet lost = (BitSet) acked.clone();
            lost.andNot(seen);
            return lost.cardinality();
        }
    }
}
