package dev.rolloutingest.table;

import static dev.rolloutingest.table.TableFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.embedded.EmbeddedS3;
import dev.rolloutingest.table.merge.MergeRequest;
import dev.rolloutingest.table.reads.ListQuery;
import dev.rolloutingest.table.storage.MemWalWatermarks;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.lance.Dataset;
import org.lance.ReadOptions;

/** write -> read -> merge -> compact -> GC on local disk and on a real S3 API (S3Proxy). */
class TableCycleIT {
    private static EmbeddedS3 s3;

    @BeforeAll
    static void startS3() {
        s3 = EmbeddedS3.start(Path.of("target", "it-s3"), "rollouts");
    }

    @AfterAll
    static void stopS3() {
        s3.close();
    }

    static Stream<String> stores() {
        return Stream.of("local", "s3", "s3-temporary-credentials");
    }

    private static TableLocation location(String store) {
        String name = "cycle-" + UUID.randomUUID();
        return switch (store) {
            case "s3" -> new TableLocation(s3.uri(name), s3.lanceStorageOptions());
            case "s3-temporary-credentials" -> {
                // S3Proxy checks the signature, which covers the token (S3CredentialsTest shows it is sent).
                Map<String, String> temporary = new HashMap<>(s3.lanceStorageOptions());
                temporary.put("aws_session_token", "session-token-of-an-assumed-role");
                yield new TableLocation(s3.uri(name), temporary);
            }
            default -> TableLocation.local(freshDir(name));
        };
    }

    @ParameterizedTest
    @MethodSource("stores")
    void theWholeCycleWorksAndAnIndependentReaderAgrees(String store) throws Exception {
        TableLocation location = location(store);
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (RolloutTable table = RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, meters)) {
            for (int p = 0; p < 2; p++) {
                for (int g = 0; g < 5; g++) {
                    var rows = rows(p, g * 20L, g * 20L + 19, 30);
                    rows.forEach(r -> r.rollout().setRecordId(r.rollout().getRecordId() + "-p" + r.sourcePartition()));
                    table.generations().write(TOPIC, p, g * 20L, g * 20L + 19, rows, 2000);
                }
            }
            assertThat(table.generations().shards())
                    .containsExactlyInAnyOrder(ShardId.of(TOPIC, 0), ShardId.of(TOPIC, 1));
            assertThat(table.countRows()).isEqualTo(60);
            assertThat(table.get("exp-5-p1").orElseThrow().sourceOffset()).isEqualTo(95);
            for (String shard : table.generations().shards()) {
                while (table.merges().pass(MergeRequest.of(shard).limits(3, 0)).mergedAnything()) {
                    // drain in bounded passes
                }
            }
            table.maintenance().compact(1_000_000);
            Thread.sleep(50);
            assertThat(table.maintenance().collectGarbage(Duration.ofMillis(10)).deletedGenerations())
                    .isEqualTo(10);
            for (String shard : table.generations().shards()) {
                assertThat(table.generations().pending(shard)).isEmpty();
            }
            assertThat(table.get("exp-5-p1").orElseThrow().sourceOffset()).isEqualTo(95);
            assertThat(table.list(ListQuery.all(100))).hasSize(60);
        }
        // An independent reader: plain lance-core, no code of ours.
        try (RootAllocator allocator = new RootAllocator();
                Dataset plain = Dataset.open()
                        .allocator(allocator)
                        .uri(location.uri())
                        .readOptions(new ReadOptions.Builder()
                                .setStorageOptions(location.storageOptions())
                                .build())
                        .build()) {
            assertThat(plain.countRows()).isEqualTo(60);
            assertThat(plain.countRows("record_id = 'exp-29-p0'")).isEqualTo(1);
            assertThat(plain.getIndexes()).anySatisfy(i -> assertThat(i.name()).isEqualTo("__lance_mem_wal"));
            assertThat(MemWalWatermarks.read(plain))
                    .containsEntry(ShardId.of(TOPIC, 0), 100L)
                    .containsEntry(ShardId.of(TOPIC, 1), 100L);
        }
    }

    @Test
    void wrongS3CredentialsAreATypedStorageError() {
        Map<String, String> wrong = new HashMap<>(s3.lanceStorageOptions());
        wrong.put("aws_secret_access_key", "not-the-secret");
        TableLocation location = new TableLocation(s3.uri("denied-" + UUID.randomUUID()), wrong);
        assertThatThrownBy(() -> RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry()))
                .isInstanceOf(RolloutTableException.StorageAccess.class)
                .hasMessageContaining(location.uri())
                .hasMessageNotContaining("not-the-secret");
    }
}
