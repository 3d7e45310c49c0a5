package dev.rolloutingest.table.rows;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.rolloutingest.table.storage.ObjectStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.TreeMap;

/**
 * Per partition, the highest offset of a delete row the table dropped ({@code TableMaintenance.dropDeletes}): a tail
 * whose cursor is below it may have missed that delete, so it is refused rather than answered without it. Written
 * before the drop commits (a drop that then fails leaves the mark a little high: tails from before it are refused,
 * never answered short). One small file beside the base: {@value #PATH}.
 */
public final class DroppedDeletes {
    public static final String PATH = "_reads/dropped-deletes.json";

    private static final ObjectMapper JSON = new ObjectMapper();

    private DroppedDeletes() {}

    /** Partition to the highest offset of a dropped delete; empty when none was ever dropped. */
    public static Map<Integer, Long> read(ObjectStore store) {
        byte[] bytes = store.get(PATH);
        if (bytes == null) {
            return Map.of();
        }
        try {
            return new TreeMap<>(JSON.readValue(bytes, new TypeReference<Map<Integer, Long>>() {}));
        } catch (IOException e) {
            throw new UncheckedIOException("unreadable " + PATH, e);
        }
    }

    /** Raises the marks to cover {@code dropping} (partition to the highest offset about to be dropped). */
    public static void raise(ObjectStore store, Map<Integer, Long> dropping) {
        Map<Integer, Long> marks = new TreeMap<>(read(store));
        dropping.forEach((partition, offset) -> marks.merge(partition, offset, Math::max));
        try {
            store.put(PATH, JSON.writeValueAsBytes(marks));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
