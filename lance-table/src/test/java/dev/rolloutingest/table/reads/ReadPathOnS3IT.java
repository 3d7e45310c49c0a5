package dev.rolloutingest.table.reads;

import static dev.rolloutingest.table.TableFixtures.TOPIC;
import static dev.rolloutingest.table.TableFixtures.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.generations.SealedGeneration;
import dev.rolloutingest.table.merge.MergeRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The read path on a real S3 API: filters, the index and the cached catalog work there too, and a warm
 * lookup costs a small number of object-store requests that does not grow with the number of shards.
 */
class ReadPathOnS3IT {
    private static final Path ROOT = Path.of("target", "it-s3-reads").toAbsolutePath();
    private static EmbeddedS3 s3;

    @BeforeAll
    static void startS3() {
        s3 = EmbeddedS3.start(ROOT, "rollouts");
    }

    @AfterAll
    static void stopS3() {
        s3.close();
    }

    /**
     * The table's own writes refresh its catalog; no timed refresh (an hour) may land among the lookups counted
     * below, however slow the machine.
     */
    private static RolloutTable table(SimpleMeterRegistry meters) {
        return RolloutTable.createOrOpen(
                new TableLocation(s3.uri("reads-" + UUID.randomUUID()), s3.lanceStorageOptions()),
                TableSettings.DEFAULTS.with(TableSettings.READ_REFRESH_MS, 3_600_000),
                meters);
    }

    /** Object-store operations of one warm lookup of a base key, averaged over 40 lookups. */
    private static double operationsPerWarmLookup(RolloutTable table) {
        for (int i = 0; i < 10; i++) {
            table.get("exp-" + i).orElseThrow();
        }
        long before = s3.operations();
        for (int i = 0; i < 40; i++) {
            table.get("exp-" + (i * 7 % 200)).orElseThrow();
        }
        return (s3.operations() - before) / 40.0;
    }

    private static void pendingOfOtherKeys(RolloutTable table, int partition) {
        var rows = TableFixtures.rows(partition, 0, 9, 1_000_000);
        rows.forEach(r -> r.rollout().setRecordId("other-" + partition + "-" + r.sourceOffset()));
        table.generations().write(TOPIC, partition, 0, 9, rows, 100);
    }

    @Test
    void aWarmLookupCostsAFewRequestsWhateverTheNumberOfShards() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = table(meters)) {
            write(table, 0, 0, 199, 200);
            table.merges().pass(MergeRequest.of(ShardId.of(TOPIC, 0)).limits(0, 0));
            table.maintenance().optimizeKeyIndex();
            // 4 shards with one pending generation each (keys no lookup asks for)...
            for (int p = 1; p <= 4; p++) {
                pendingOfOtherKeys(table, p);
            }
            double fewShards = operationsPerWarmLookup(table);
            // ...then 40.
            for (int p = 5; p <= 40; p++) {
                pendingOfOtherKeys(table, p);
            }
            double manyShards = operationsPerWarmLookup(table);
            System.out.printf(
                    "S3 operations per warm lookup: %.1f with 4 shards, %.1f with 40%n", fewShards, manyShards);
            assertThat(manyShards)
                    .as("requests per lookup do not grow with shards")
                    .isLessThanOrEqualTo(fewShards + 1.0);
            assertThat(manyShards)
                    .as("no listing, manifest or seal read per lookup")
                    .isLessThan(10.0);
            double skipped = meters.get("rollout.read.generations")
                    .tag("result", "skipped")
                    .counter()
                    .count();
            assertThat(skipped).isGreaterThan(40 * 40 * 0.9);
        }
    }

    @Test
    void filtersAndABrokenGenerationBehaveOnS3AsOnDisk() throws Exception {
        try (RolloutTable table = table(new SimpleMeterRegistry())) {
            write(table, 0, 0, 9, 1_000_000);
            SealedGeneration broken = write(table, 0, 10, 19, 1_000_000);
            // The server keeps objects as files: delete the generation's behind its back.
            String key = table.location().uri().substring(("s3://" + s3.bucket() + "/").length()) + "/"
                    + broken.datasetPath();
            dev.rolloutingest.embedded.FileTrees.deleteRecursively(
                    ROOT.resolve(s3.bucket()).resolve(key));
            int readable = 0;
            for (int i = 0; i < 10; i++) {
                if (table.get("exp-" + i).isPresent()) {
                    readable++;
                }
            }
            assertThat(readable).isGreaterThanOrEqualTo(9);
            assertThatThrownBy(() -> table.get("exp-12"))
                    .isInstanceOf(RolloutTableException.GenerationUnreadable.class)
                    .hasMessageContaining("generation " + broken.generation());
        }
    }
}
