package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.appendWithLance;
import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.put;
import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.merge.FragmentBounds.DeletionState;
import dev.rolloutingest.table.merge.RowLiveness.Source;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

/**
 * A row a source saw live stays trusted through this committer's own commits (never the rows they deleted), not
 * through anyone else's nor in another fragment of the same id, and the record of its commits stays within its memory.
 */
class RowLivenessTest {
    private static final DeletionState SEEN = new DeletionState("a.lance", false, 0, 0);
    private static final DeletionState OURS = new DeletionState("a.lance", true, 11, 5);
    private static final DeletionState OURS_AGAIN = new DeletionState("a.lance", true, 12, 6);
    private static final DeletionState OTHERS = new DeletionState("a.lance", true, 13, 6);

    private static long address(int fragment, int offset) {
        return (long) fragment << 32 | offset;
    }

    @Test
    void rowsStayLiveThroughTheCommittersOwnDeletesButTheRowsTheyDeleted() {
        RowLiveness liveness = new RowLiveness(1 << 20);
        liveness.saw(Source.FILE, 3, SEEN);
        assertThat(liveness.live(Source.FILE, address(3, 7), SEEN)).isTrue();

        liveness.committed(Map.of(3, SEEN), Map.of(3, OURS), Map.of(3, List.of(7)));
        liveness.committed(Map.of(3, OURS), Map.of(3, OURS_AGAIN), Map.of(3, List.of(8)));

        assertThat(liveness.live(Source.FILE, address(3, 9), OURS_AGAIN)).isTrue();
        assertThat(liveness.live(Source.FILE, address(3, 7), OURS_AGAIN)).isFalse();
        assertThat(liveness.live(Source.FILE, address(3, 8), OURS_AGAIN)).isFalse();
        assertThat(liveness.live(Source.FILE, address(3, 9), OTHERS))
                .as("someone else's deletes")
                .isFalse();
        assertThat(liveness.live(Source.BOOK, address(3, 9), OURS_AGAIN))
                .as("a source that never saw it")
                .isFalse();
    }

    /** Fragment 0 of a table written anew at the same place, as lance-core alone reads it. */
    private static DeletionState fragmentZeroOfANewTable(TableLocation location, String key) throws Exception {
        KeyAddressFile.deleteTree(Path.of(location.uri()));
        appendWithLance(location, List.of(put(new RolloutGenerator("liveness", 8, 1), 0, 0, key, 0)));
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            assertThat(base.getFragments().get(0).getId()).isZero();
            return DeletionState.of(base.getFragments().get(0).metadata());
        }
    }

    /** A table made anew at the same place numbers its fragments from 0 again: the same id, another fragment. */
    @Test
    void aFragmentIdUsedAgainIsAnotherFragment() throws Exception {
        TableLocation location = TableLocation.local(freshDir("liveness-id-again"));
        DeletionState first = fragmentZeroOfANewTable(location, "key-a");
        DeletionState second = fragmentZeroOfANewTable(location, "key-b");
        RowLiveness liveness = new RowLiveness(1 << 20);
        liveness.saw(Source.FILE, 0, first);

        assertThat(second).isNotEqualTo(first);
        assertThat(liveness.live(Source.FILE, address(0, 0), second)).isFalse();
        assertThat(liveness.live(Source.FILE, address(0, 0), first)).isTrue();
    }

    @Test
    void pastItsMemoryItLetsGoOfTheFragmentsItsCommitsChanged() {
        // room for one commit's record of 16 addresses and a transition, not two
        long room = 16 * 32 + 128 + 100;
        RowLiveness liveness = new RowLiveness(room);
        liveness.saw(Source.BOOK, 1, SEEN);
        liveness.saw(Source.BOOK, 2, SEEN);
        List<Integer> sixteen = java.util.stream.IntStream.range(0, 16).boxed().toList();
        liveness.committed(Map.of(1, SEEN), Map.of(1, OURS), Map.of(1, sixteen));
        assertThat(liveness.live(Source.BOOK, address(1, 20), OURS)).isTrue();
        assertThat(liveness.bytes()).isLessThanOrEqualTo(room);

        liveness.committed(Map.of(2, SEEN), Map.of(2, OURS), Map.of(2, sixteen));

        assertThat(liveness.live(Source.BOOK, address(1, 20), OURS))
                .as("let go of")
                .isFalse();
        assertThat(liveness.live(Source.BOOK, address(1, 5), OURS)).isFalse();
        assertThat(liveness.live(Source.BOOK, address(2, 20), OURS)).isTrue();
        assertThat(liveness.live(Source.BOOK, address(2, 5), OURS)).isFalse();
        assertThat(liveness.bytes()).isLessThanOrEqualTo(room);
    }
}
