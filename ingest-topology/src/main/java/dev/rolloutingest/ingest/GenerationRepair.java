package dev.rolloutingest.ingest;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import dev.rolloutingest.table.generations.GenerationBatch;
import dev.rolloutingest.table.generations.SealedGeneration;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;

/**
 * Rebuilds a pending generation whose files are gone, from the input topic: the records of its offset range,
 * checked the way ingest checked them (dead letters and the rows the seal lists as refused left out), written
 * again under the same seal. A generation's content is a function of its offsets, so this is the generation it
 * was. Needs the range still in the topic (its retention) and the registry.
 */
public final class GenerationRepair {
    private final IngestConfig config;
    private final TableCatalog tables;
    private final String tableName;

    /** Repairs generations of table {@code tableName} of {@code tables}. */
    public GenerationRepair(IngestConfig config, TableCatalog tables, String tableName) {
        this.config = config;
        this.tables = tables;
        this.tableName = tableName;
    }

    /** Re-reads the seal's range and writes the generation again; returns the rows written. */
    public int repair(SealedGeneration seal) {
        IngestMetrics metrics = new IngestMetrics(new SimpleMeterRegistry(), new InflightBudget(0));
        RecordCheck check = RecordCheck.of(config, IngestTopology.values(config, metrics), metrics);
        InputRereader rereader =
                new InputRereader(tp -> IngestTopology.recoveryReader(config), metrics, Duration.ofMinutes(5));
        Set<Long> refused = new HashSet<>();
        seal.deadLettered().forEach(d -> refused.add(d.offset()));
        TopicPartition tp = new TopicPartition(seal.topic(), seal.partition());
        RolloutTable table = tables.require(tableName);
        // the range's records of every table are read again; the rows routed to this one are its generation
        try (RoutedBatch batches = new RoutedBatch(tables)) {
            int read = rereader.reread(tp, seal.firstOffset(), seal.lastOffset() + 1, record -> {
                if (refused.contains(record.offset())) {
                    return;
                }
                // A record refused here was dead-lettered when it was first ingested.
                check.accept(
                        record.topic(),
                        record.key(),
                        record.value(),
                        record.headers(),
                        batches,
                        seal.partition(),
                        record.offset(),
                        Instant.now());
            });
            if (read == 0) {
                throw new IllegalStateException("offsets [" + seal.firstOffset() + ", " + seal.lastOffset() + "] of "
                        + tp + " are no longer in the topic; the generation cannot be rebuilt");
            }
            GenerationBatch batch = batches.forTable(tableName);
            table.generations().rewrite(seal, batch);
            return batch.size();
        }
    }
}
