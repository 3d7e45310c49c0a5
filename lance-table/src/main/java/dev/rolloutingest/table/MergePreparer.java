package dev.rolloutingest.table;

import dev.rolloutingest.table.MergeRound.MergePlan;
import dev.rolloutingest.table.MergeRound.PreparedMerge;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/**
 * The slow, parallel step of a merge round: reads one shard's planned generations, ascending, newest row per key,
 * on any thread (memory: that shard's rows). Keys and provenance first; only what the commit cannot adopt whole
 * is read in full.
 */
final class MergePreparer {
    private final LanceIo lance;
    private final TableSettings settings;
    private final BaseKeys keys;
    private final MergeMeters meters;

    MergePreparer(LanceIo lance, TableSettings settings, BaseKeys keys, MergeMeters meters) {
        this.lance = lance;
        this.settings = settings;
        this.keys = keys;
        this.meters = meters;
    }

    /**
     * A generation with at most 1/this of its keys maybe in the base is likely all new: 0.4 %, above the key
     * filter's false positives (0.1 % a layer). More, and they are likely real updates, so the generation is read
     * in full here, on the prepare threads, rather than on the commit thread (a 1 % mix read there doubled a round).
     */
    private static final int LIKELY_NEW_MAYBES = 250;

    /**
     * Reads a plan's generations, ascending, newest row per key; safe on any thread. Every generation's keys and
     * provenance are read first; a generation the merge will likely adopt whole (all its rows kept, its keys ruled
     * out by the committer's filter as it stands but for a few false positives) stays at that, the others are read in full. The commit reads in
     * full whatever it cannot adopt after all.
     */
    PreparedMerge prepare(MergePlan plan) {
        if (plan.failure() != null) {
            throw plan.failure();
        }
        long started = System.nanoTime();
        MergeSource source = new MergeSource();
        try {
            Set<SealedGeneration> byKeys = Collections.newSetFromMap(new IdentityHashMap<>());
            for (SealedGeneration generation : plan.generations()) {
                // only a generation the commit may adopt is worth reading by its keys alone first
                boolean mayAdopt = settings.mergeAppendNewKeys() && generation.rows() >= settings.mergeAdoptMinRows();
                if (mayAdopt) {
                    byKeys.add(generation);
                }
                readGeneration(source, generation, mayAdopt ? MergeSource.KEY_COLUMNS : null);
            }
            if (!byKeys.isEmpty()) {
                for (MergeSource.Span span : source.spans()) {
                    if (!byKeys.contains(span.generation())) {
                        continue; // read in full already
                    }
                    // a few maybes are the filter's false positives, which the commit checks exactly
                    if (span.fragment() != null
                            && !source.anyDropped(span)
                            && !source.mayHoldDeletes(span)
                            && source.hashes(span).stream()
                                            .filter(keys::mightHold)
                                            .count()
                                    <= span.rows() / LIKELY_NEW_MAYBES) {
                        source.keepKeysOnly(span);
                    } else {
                        readFull(source, span);
                    }
                }
            }
            Duration read = Duration.ofNanos(System.nanoTime() - started);
            meters.readPhase.record(read);
            return new PreparedMerge(plan, source, read);
        } catch (Exception e) {
            source.close();
            throw LanceIo.unchecked(e);
        }
    }

    /** Reads a generation's rows: these columns, or (null) every column it has, added ones too. */
    private void readGeneration(MergeSource source, SealedGeneration generation, List<String> columns) {
        String uri = lance.location().resolve(generation.datasetPath());
        try (Dataset dataset = lance.openGeneration(uri);
                LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(columns == null ? allColumns(dataset) : columns)
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            int first = source.size();
            while (reader.loadNextBatch()) {
                source.addAll(reader.getVectorSchemaRoot(), lance.allocator());
            }
            source.endGeneration(
                    generation, first, GenerationAdoption.fragmentOf(dataset), GenerationAdoption.schemaOf(dataset));
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw unreadable(generation, e);
        }
    }

    /** Reads a keys-only generation's rows in full, in the order its keys were read. */
    private void readFull(MergeSource source, MergeSource.Span span) {
        SealedGeneration generation = span.generation();
        try (Dataset dataset = lance.openGeneration(lance.location().resolve(generation.datasetPath()));
                LanceScanner scanner = dataset.newScan(new ScanOptions.Builder()
                        .columns(allColumns(dataset))
                        .batchSize(4096)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            int row = 0;
            while (reader.loadNextBatch()) {
                VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                source.addFullRows(span, batch, row, lance.allocator());
                row += batch.getRowCount();
            }
            source.fullRowsRead(span);
        } catch (RolloutTableException e) {
            throw e;
        } catch (Exception e) {
            throw unreadable(generation, e);
        }
    }

    /** The contract's columns and those producers added that a generation holds. */
    private static List<String> allColumns(Dataset generation) {
        List<String> columns = new ArrayList<>(RolloutSchema.allColumns());
        columns.addAll(AddedColumns.names(generation.getSchema()));
        return columns;
    }

    private RolloutTableException unreadable(SealedGeneration generation, Exception e) {
        return new RolloutTableException.GenerationUnreadable(
                lance.location().uri(), generation.shard(), generation.generation(), generation.folder(), e);
    }

    /**
     * The rows with all their columns: keys-only generations among them are read in full first, and every row is
     * looked up where it sits now (a row taken before another call read its generation in full still points at
     * the keys-only batch).
     */
    List<MergeSource.Row> withAllColumns(List<MergeSource.Row> rows) {
        for (MergeSource.Row row : rows) {
            MergeSource.Span span = row.source().spanOf(row.ordinal());
            if (row.source().isKeysOnly(span)) {
                readFull(row.source(), span);
            }
        }
        List<MergeSource.Row> current = new ArrayList<>(rows.size());
        for (MergeSource.Row row : rows) {
            current.add(row.source().row(row.ordinal()));
        }
        return current;
    }
}
