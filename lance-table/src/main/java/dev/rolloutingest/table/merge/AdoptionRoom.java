package dev.rolloutingest.table.merge;

/**
 * How many more generations a table's base may take in whole: each adopted generation stays a fragment until
 * compaction, and {@code rollout.merge.adopt.max.base.fragments} bounds the base's count. The committer counts the
 * base's fragments at each commit; the preparer reads a generation by its keys alone (to be adopted) only while the
 * last commit left room, since at the cap the commit would read it again in full, on the table's one commit lane.
 */
final class AdoptionRoom {
    private final int maxFragments;
    /** The base's fragments at the last commit; 0 before the first. */
    private volatile int lastSeen;

    AdoptionRoom(int maxFragments) {
        this.maxFragments = maxFragments;
    }

    /** Generations a commit on a base of {@code fragments} fragments may adopt; remembers the count. */
    int at(int fragments) {
        lastSeen = fragments;
        return Math.max(0, maxFragments - fragments);
    }

    /** The base's fragments once a commit landed (those it found and those it added). */
    void committed(int fragments) {
        lastSeen = fragments;
    }

    /** Whether the last commit left room for a generation adopted whole. */
    boolean left() {
        return lastSeen < maxFragments;
    }
}
