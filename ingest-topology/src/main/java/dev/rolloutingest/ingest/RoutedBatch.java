package dev.rolloutingest.ingest;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.GenerationBatch;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One input partition's rows waiting to be sealed, a batch per table they are routed to. A seal writes one generation
 * per table, all for the same offset range. The row trigger counts the largest table's rows (a generation's size),
 * the bytes and age triggers the whole partition: spreading a partition over many tables neither multiplies its seals
 * nor shrinks every generation to a sliver of the trigger (100 tables made generations of ~100 rows, and a merge pays
 * per generation); memory stays bounded by the bytes over all tables.
 *
 * <p>Not thread-safe: one owner at a time (the partition's batcher, then the writer it hands it to).
 */
final class RoutedBatch implements AutoCloseable {
    private final TableCatalog tables;
    private final Map<String, GenerationBatch> parts = new LinkedHashMap<>();
    private final Map<String, RolloutTable> partTables = new LinkedHashMap<>();
    private final Map<String, Long> partBytes = new LinkedHashMap<>();
    private int largestPartRows;
    /** Where a row whose table is named by its own fields is decoded before it moves to its table's batch. */
    private GenerationBatch landing;

    RoutedBatch(TableCatalog tables) {
        this.tables = tables;
    }

    /** The batch of table {@code name}, the table created on its first row (fails past the catalog's cap). */
    GenerationBatch forTable(String name) {
        GenerationBatch part = parts.get(name);
        if (part == null) {
            RolloutTable table = tables.createOrOpen(name);
            part = table.generations().newBatch();
            parts.put(name, part);
            partTables.put(name, table);
        }
        return part;
    }

    /** A batch of no table that only ever stages a row (see {@link GenerationBatch#moveStagedTo}). */
    GenerationBatch landing() {
        if (landing == null) {
            landing = tables.newLandingBatch();
        }
        return landing;
    }

    /** The part of table {@code name}, or null. */
    GenerationBatch part(String name) {
        return parts.get(name);
    }

    /** The parts holding rows, by table name. */
    Map<String, GenerationBatch> parts() {
        Map<String, GenerationBatch> filled = new LinkedHashMap<>();
        parts.forEach((name, part) -> {
            if (!part.isEmpty()) {
                filled.put(name, part);
            }
        });
        return filled;
    }

    /** Counts a row just added to table {@code name}'s part, and its record's bytes (key and value). */
    void added(String name, long bytes) {
        partBytes.merge(name, bytes, Long::sum);
        largestPartRows = Math.max(largestPartRows, parts.get(name).size());
    }

    /** Rows of the table with the most: the size of the largest generation a seal would write now. */
    int largestPartRows() {
        return largestPartRows;
    }

    /** The input bytes of table {@code name}'s rows. */
    long bytes(String name) {
        return partBytes.getOrDefault(name, 0L);
    }

    RolloutTable table(String name) {
        return partTables.get(name);
    }

    /** Rows over all tables. */
    int size() {
        int size = 0;
        for (GenerationBatch part : parts.values()) {
            size += part.size();
        }
        return size;
    }

    boolean isEmpty() {
        return size() == 0;
    }

    @Override
    public void close() {
        parts.values().forEach(GenerationBatch::close);
        if (landing != null) {
            landing.close();
        }
    }
}
