package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.generations.GenerationCatalog;
import dev.rolloutingest.table.rows.RolloutSchema;
import dev.rolloutingest.table.rows.Tombstones;
import dev.rolloutingest.table.storage.LanceIo;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.arrow.vector.VarCharVector;
import org.lance.Dataset;

/**
 * The deletes a base version applied that are not kept beside it yet. A round keeps its deletes ({@code BaseDeletes})
 * after the base commit that removed the values they replace; between the two, and after a crash between them, those
 * deletes are only in the round's generations, still pending, which the base's newest data commit names ({@link
 * dev.rolloutingest.table.storage.UnmarkedDeletes}). Another shard's round checking an older value of such a key
 * against that base finds neither the value nor a kept delete: it reads the deletes here, so the value loses to the
 * applied delete as to a kept one, and no base value is ever older than a kept delete.
 *
 * <p>Read before the kept deletes: a named generation that cannot be opened any more was marked merged (garbage
 * collection deletes nothing above the watermarks), and a round keeps its deletes before its marks, so a look at the
 * kept deletes after this one finds them.
 */
final class AppliedDeletes {
    private AppliedDeletes() {}

    /**
     * The deletes of {@code keys} in the generations {@code unmarked} names (per shard those above the base's watermark
     * up to the named one), by key; empty when nothing is named.
     */
    static Map<String, List<MergeJoin.BaseRow>> of(
            LanceIo lance,
            GenerationCatalog catalog,
            Map<String, Long> unmarked,
            Map<String, Long> watermarks,
            Set<String> keys) {
        Map<String, List<MergeJoin.BaseRow>> found = new HashMap<>();
        if (unmarked.isEmpty() || keys.isEmpty()) {
            return found;
        }
        for (Map.Entry<String, Long> named : unmarked.entrySet()) {
            String shard = named.getKey();
            for (GenerationCatalog.Listed generation : catalog.pending(shard, watermarks.getOrDefault(shard, 0L))) {
                if (Long.compareUnsigned(generation.generation(), named.getValue()) > 0) {
                    break; // ascending: the rest were not merged by the data commit that named the shard
                }
                read(lance, generation, keys, found);
            }
        }
        return found;
    }

    private static void read(
            LanceIo lance,
            GenerationCatalog.Listed generation,
            Set<String> keys,
            Map<String, List<MergeJoin.BaseRow>> found) {
        Dataset dataset;
        try {
            dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
        } catch (RuntimeException e) {
            if (markedSince(lance, generation)) {
                return; // collected after its marks: its deletes are kept beside the base
            }
            throw e;
        }
        try (dataset) {
            Tombstones.forEach(dataset, Tombstones.CANDIDATES, (batch, i) -> {
                String key = new String(
                        ((VarCharVector) batch.getVector(RolloutSchema.RECORD_ID)).get(i), StandardCharsets.UTF_8);
                if (keys.contains(key)) {
                    found.computeIfAbsent(key, k -> new ArrayList<>(1))
                            .add(MergeJoin.BaseRowColumns.of(batch).row(i));
                }
            });
        }
    }

    private static boolean markedSince(LanceIo lance, GenerationCatalog.Listed generation) {
        try (Dataset latest = lance.openBase()) {
            long watermark = MemWalWatermarks.read(latest).getOrDefault(generation.shard(), 0L);
            return Long.compareUnsigned(generation.generation(), watermark) <= 0;
        }
    }
}
