package dev.rolloutingest.table.snapshots;

import dev.rolloutingest.table.snapshots.TableSnapshots.Snapshot;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.lance.Dataset;
import org.lance.Tag;

/**
 * What a snapshot's lance tag holds beside its version: the offsets it ends at, when it was made, its rows and the cut
 * asked for, as strings in the tag's metadata (lance keeps no other types there). A tag made by another tool has none
 * of it and is read with what lance knows.
 */
final class SnapshotTags {
    /** Tag metadata: {@code topic:partition=offset,...} (or {@code shard=offset} for a shard of another topic). */
    static final String OFFSETS = "rollout.snapshot.offsets";

    static final String CREATED = "rollout.snapshot.created";
    static final String ROWS = "rollout.snapshot.rows";
    static final String REQUESTED_CUT = "rollout.snapshot.requested.cut";

    private SnapshotTags() {}

    /** The metadata of a new snapshot's tag; the requested cut only when one was asked for. */
    static Map<String, String> metadata(
            Map<String, Long> offsets, Instant created, long rows, Map<String, Long> requestedCut) {
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put(OFFSETS, format(offsets));
        metadata.put(CREATED, created.toString());
        metadata.put(ROWS, Long.toString(rows));
        if (!requestedCut.isEmpty()) {
            metadata.put(REQUESTED_CUT, format(requestedCut));
        }
        return metadata;
    }

    /** The snapshot a tag of {@code base} names; rows are counted at its version when the tag does not say. */
    static Snapshot read(Dataset base, Tag tag) {
        Map<String, String> metadata = tag.getMetadata() == null ? Map.of() : tag.getMetadata();
        Optional<Instant> created =
                Optional.ofNullable(metadata.get(CREATED)).map(Instant::parse).or(tag::getCreatedAt);
        long rows;
        if (metadata.containsKey(ROWS)) {
            rows = Long.parseLong(metadata.get(ROWS));
        } else {
            try (Dataset at = base.checkoutVersion(tag.getVersion())) {
                rows = SnapshotVersions.liveRows(at);
            }
        }
        return new Snapshot(
                tag.getName(),
                tag.getVersion(),
                created,
                rows,
                parse(metadata.get(OFFSETS)),
                parse(metadata.get(REQUESTED_CUT)));
    }

    static String format(Map<String, Long> offsets) {
        StringBuilder out = new StringBuilder();
        offsets.forEach((k, v) ->
                out.append(out.isEmpty() ? "" : ",").append(k).append('=').append(v));
        return out.toString();
    }

    static Map<String, Long> parse(String formatted) {
        Map<String, Long> offsets = new TreeMap<>();
        if (formatted == null || formatted.isBlank()) {
            return offsets;
        }
        for (String pair : formatted.split(",")) {
            int eq = pair.lastIndexOf('=');
            offsets.put(pair.substring(0, eq), Long.parseLong(pair.substring(eq + 1)));
        }
        return offsets;
    }
}
