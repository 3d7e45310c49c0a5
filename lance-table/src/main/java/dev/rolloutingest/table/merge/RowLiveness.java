package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.merge.FragmentBounds.DeletionState;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Whether a row a source of addresses saw live is live still, without reading it: its fragment's deletions are the
 * ones the source saw, or moved on from them by this committer's own commits only, and none of those deleted the row.
 * A commit of anyone else (a delete, a restore, another committer) leaves another deletion file than the ones known
 * here, and every row of that fragment must then be read to be trusted.
 *
 * <p>Each of this committer's commits records, per fragment it deleted rows in, the deletion state it went from and
 * the one it left, so a source that saw any state along that chain (a file built while the commits went on) follows it
 * to the fragment's state now. The addresses deleted and the chains are kept up to {@code maxBytes}; past that both are
 * let go together with every fragment they were in (whose rows are then read again to be trusted), so
 * memory stays bounded.
 */
final class RowLiveness {
    /** Who saw a fragment's rows live: the book of the newest keys, or the file of every key. */
    enum Source {
        BOOK,
        FILE
    }

    private static final long EMPTY = -1;

    private final Map<Source, Map<Integer, DeletionState>> seen = new EnumMap<>(Source.class);
    /** The states this committer's commits took each fragment through: from one state to the next. */
    private final Map<Integer, Map<DeletionState, DeletionState>> moved = new HashMap<>();

    /** A deleted address in a table between a quarter and half full. */
    private static final int BYTES_PER_ADDRESS = 32;
    /** A transition: a map entry and its two states. */
    private static final int BYTES_PER_TRANSITION = 128;

    private final long maxBytes;
    private long transitions;
    /** Open addressing, linear probing, at most half full; null while empty. */
    private long[] deleted;

    private int deletedCount;

    /** @param maxBytes the memory of the deleted addresses and the transitions, at most */
    RowLiveness(long maxBytes) {
        this.maxBytes = maxBytes;
        for (Source source : Source.values()) {
            seen.put(source, new HashMap<>());
        }
    }

    /** The source read the fragment's live rows in this deletion state. */
    void saw(Source source, int fragment, DeletionState state) {
        seen.get(source).put(fragment, state);
    }

    void forget(Source source) {
        seen.get(source).clear();
    }

    /** Lets go of every fragment's state and every deleted address. */
    void clear() {
        seen.values().forEach(Map::clear);
        moved.clear();
        transitions = 0;
        deleted = null;
        deletedCount = 0;
    }

    /** Keeps the fragments of a version only: the others are gone (compacted, deleted, restored away). */
    void retain(Set<Integer> present) {
        seen.values().forEach(states -> states.keySet().retainAll(present));
        moved.entrySet().removeIf(fragment -> {
            boolean gone = !present.contains(fragment.getKey());
            transitions -= gone ? fragment.getValue().size() : 0;
            return gone;
        });
    }

    /** True when the row the source saw live at {@code address} is live in a version whose fragment is {@code now}. */
    boolean live(Source source, long address, DeletionState now) {
        int fragment = (int) (address >>> 32);
        Map<Integer, DeletionState> states = seen.get(source);
        DeletionState known = states.get(fragment);
        if (known == null) {
            return false;
        }
        if (!known.equals(now)) {
            Map<DeletionState, DeletionState> chain = moved.getOrDefault(fragment, Map.of());
            DeletionState at = known;
            for (int steps = chain.size(); steps > 0 && at != null && !at.equals(now); steps--) {
                at = chain.get(at);
            }
            if (!now.equals(at)) {
                return false;
            }
            states.put(fragment, now); // the source knows the state now, less the addresses deleted
        }
        return !deletedHere(address);
    }

    /**
     * This committer's commit deleted {@code rows} (offsets by fragment): each fragment went from its state in the
     * version the commit was checked against ({@code before}) to {@code after} (absent: the fragment went, no row
     * left). A source that knew the state before knows the one after, less the rows deleted.
     */
    void committed(
            Map<Integer, DeletionState> before, Map<Integer, DeletionState> after, Map<Integer, List<Integer>> rows) {
        if (rows.isEmpty()) {
            return;
        }
        long addresses = rows.values().stream().mapToLong(List::size).sum();
        if (heldBytes(deletedCount + addresses, transitions + rows.size()) > maxBytes) {
            // let go of what the deleted addresses stood for: those fragments' rows are read again to be trusted
            for (Map<Integer, DeletionState> states : seen.values()) {
                states.keySet().removeAll(moved.keySet());
            }
            moved.clear();
            transitions = 0;
            deleted = null;
            deletedCount = 0;
        }
        for (Map.Entry<Integer, List<Integer>> fragment : rows.entrySet()) {
            int id = fragment.getKey();
            DeletionState was = before.get(id);
            DeletionState is = after.get(id);
            if (was != null
                    && is != null
                    && heldBytes(deletedCount + fragment.getValue().size(), transitions + 1) <= maxBytes) {
                moved.computeIfAbsent(id, f -> new HashMap<>()).put(was, is);
                transitions++;
                for (int offset : fragment.getValue()) {
                    addDeleted((long) id << 32 | (offset & 0xFFFF_FFFFL));
                }
            } else { // emptied, or more addresses than are kept: its rows are read
                for (Map<Integer, DeletionState> states : seen.values()) {
                    states.remove(id);
                }
                Map<DeletionState, DeletionState> chain = moved.remove(id);
                transitions -= chain == null ? 0 : chain.size();
            }
        }
    }

    private static long heldBytes(long addresses, long transitions) {
        return addresses * BYTES_PER_ADDRESS + transitions * BYTES_PER_TRANSITION;
    }

    /** The memory of the deleted addresses and the transitions. */
    long bytes() {
        return (deleted == null ? 0 : deleted.length * 8L) + transitions * BYTES_PER_TRANSITION;
    }

    private boolean deletedHere(long address) {
        if (deleted == null) {
            return false;
        }
        for (int i = index(address, deleted.length); ; i = (i + 1) & (deleted.length - 1)) {
            if (deleted[i] == address) {
                return true;
            }
            if (deleted[i] == EMPTY) {
                return false;
            }
        }
    }

    private void addDeleted(long address) {
        if (deleted == null) {
            deleted = empty(64);
        }
        if ((deletedCount + 1) * 2L > deleted.length) {
            long[] old = deleted;
            deleted = empty(old.length * 2);
            deletedCount = 0;
            for (long a : old) {
                if (a != EMPTY) {
                    addDeleted(a);
                }
            }
        }
        for (int i = index(address, deleted.length); ; i = (i + 1) & (deleted.length - 1)) {
            if (deleted[i] == address) {
                return;
            }
            if (deleted[i] == EMPTY) {
                deleted[i] = address;
                deletedCount++;
                return;
            }
        }
    }

    private static int index(long address, int slots) {
        long h = address * 0x9E37_79B9_7F4A_7C15L;
        return (int) (h >>> 32) & (slots - 1);
    }

    private static long[] empty(int slots) {
        long[] a = new long[slots];
        Arrays.fill(a, EMPTY);
        return a;
    }
}
