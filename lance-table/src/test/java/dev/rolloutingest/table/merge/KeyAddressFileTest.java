package dev.rolloutingest.table.merge;

import static dev.rolloutingest.table.TableFixtures.freshDir;
import static dev.rolloutingest.table.TableFixtures.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.rows.KeyFilter;
import dev.rolloutingest.table.rows.RolloutRow;
import dev.rolloutingest.table.rows.RolloutSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.UInt8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;
import org.lance.ipc.LanceScanner;
import org.lance.ipc.ScanOptions;

/** The file of every base key's address: each key of the base at its row address, whatever the buckets. */
class KeyAddressFileTest {
    private static final RolloutGenerator GENERATOR = new RolloutGenerator("file", 8, 5);

    private static TableLocation baseOf(String name, int fragments, int rowsEach) {
        TableLocation location = TableLocation.local(freshDir(name));
        try (RolloutTable table =
                RolloutTable.createOrOpen(location, TableSettings.DEFAULTS, new SimpleMeterRegistry())) {
            for (int f = 0; f < fragments; f++) {
                List<RolloutRow> rows = new ArrayList<>();
                for (int i = 0; i < rowsEach; i++) {
                    long offset = (long) f * rowsEach + i;
                    rows.add(put(GENERATOR, 0, offset, "key-" + offset, f));
                }
                TableFixtures.write(table, 0, rows);
                table.merges()
                        .pass(MergeRequest.of(ShardId.of(TableFixtures.TOPIC, 0))
                                .limits(8, 0));
            }
        }
        return location;
    }

    /** Every key's row address, read from the base by lance-core alone. */
    private static Map<String, Long> addresses(Dataset base) throws Exception {
        Map<String, Long> addresses = new HashMap<>();
        try (LanceScanner scanner = base.newScan(new ScanOptions.Builder()
                        .columns(List.of(RolloutSchema.RECORD_ID))
                        .withRowAddress(true)
                        .build());
                ArrowReader reader = scanner.scanBatches()) {
            while (reader.loadNextBatch()) {
                var batch = reader.getVectorSchemaRoot();
                VarCharVector keys = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
                UInt8Vector rows = (UInt8Vector) batch.getVector(KeyAddresses.ROW_ADDRESS);
                for (int i = 0; i < batch.getRowCount(); i++) {
                    assertThat(addresses.put(new String(keys.get(i)), rows.get(i)))
                            .isNull();
                }
            }
        }
        return addresses;
    }

    private static long hashOf(String key) {
        return slotHash(KeyFilter.hash(key));
    }

    private static long slotHash(KeyFilter.Hash hash) {
        return hash.h1() == 0 ? 1 : hash.h1();
    }

    @Test
    void everyKeyIsAtItsRowAddressWhenTheBuildSpreadItOverManyBuckets() throws Exception {
        TableLocation location = baseOf("file-buckets", 3, 2_000);
        Path folder = freshDir("file-buckets-files");
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            Map<String, Long> expected = addresses(base);
            // 1 KiB a bucket: 6,000 entries of 24 bytes go to the most buckets a build makes (1,024)
            try (KeyAddressFile file =
                    KeyAddressFile.build(base, base.getFragments(), folder, 1024, KeyAddressFileTest::slotHash)) {
                assertThat(file.entries()).isEqualTo(6_000);
                assertThat(file.version()).isEqualTo(base.version());
                assertThat(file.maxFragmentId()).isEqualTo(2);
                expected.forEach((key, address) -> {
                    long entry = file.find(hashOf(key));
                    assertThat(file.address(entry)).as(key).isEqualTo(address);
                    assertThat(file.check(entry))
                            .as(key)
                            .isEqualTo(KeyFilter.hash(key).h2());
                });
                // three fragments of one partition: offsets up to each one's last, ingested f seconds after T0
                for (int f = 0; f < 3; f++) {
                    FragmentBounds bounds = file.bounds(f);
                    assertThat(bounds.partitions()).containsExactly(0);
                    assertThat(bounds.maxOffsets()).containsExactly(f * 2_000L + 1_999);
                    assertThat(bounds.olderThan(0, f * 2_000L + 2_000, 0)).isTrue();
                    assertThat(bounds.olderThan(0, f * 2_000L + 1_999, Long.MAX_VALUE))
                            .isFalse();
                }
                assertThat(file.deletions()).containsOnlyKeys(0, 1, 2);
                for (int i = 0; i < 1_000; i++) {
                    assertThat(file.get(hashOf("absent-" + i))).isEqualTo(-1);
                }
            }
            // read through mappings of 170 entries (4,080 bytes) each, as a file over 768 MiB is read through several
            try (KeyAddressFile file =
                    KeyAddressFile.open(folder.resolve(base.version() + KeyAddressFile.SUFFIX), 170)) {
                expected.forEach((key, address) ->
                        assertThat(file.get(hashOf(key))).as(key).isEqualTo(address));
            }
            assertThat(Files.list(folder).map(p -> p.getFileName().toString()).toList())
                    .as("the buckets are gone, the file stays")
                    .containsExactly(base.version() + KeyAddressFile.SUFFIX);
        }
    }

    @Test
    void pairsSortByHashUnsigned() {
        Random random = new Random(7);
        for (int n : new int[] {0, 1, 2, 17, 1_000, 50_000}) {
            long[] hashes = new long[n];
            long[] checks = new long[n];
            long[] addresses = new long[n];
            for (int i = 0; i < n; i++) {
                hashes[i] = i % 10 == 0 ? random.nextInt(5) : random.nextLong(); // repeats, and both signs
                checks[i] = hashes[i] * 7 - 3;
                addresses[i] = hashes[i] * 31 + 1;
            }
            KeyAddressFile.sortByHash(hashes, checks, addresses, 0, n - 1);
            for (int i = 0; i < n; i++) {
                assertThat(addresses[i]).isEqualTo(hashes[i] * 31 + 1);
                assertThat(checks[i]).isEqualTo(hashes[i] * 7 - 3);
                if (i > 0) {
                    assertThat(Long.compareUnsigned(hashes[i - 1], hashes[i])).isLessThanOrEqualTo(0);
                }
            }
        }
    }

    @Test
    void aFileCutShortIsNeitherOpenedNorKeptAndTheNewestWholeOneIs() throws Exception {
        TableLocation location = baseOf("file-cut", 1, 1_000);
        Path folder = freshDir("file-cut-files");
        try (RootAllocator allocator = new RootAllocator();
                Dataset base =
                        Dataset.open().allocator(allocator).uri(location.uri()).build()) {
            Path whole;
            try (KeyAddressFile file =
                    KeyAddressFile.build(base, base.getFragments(), folder, 1 << 20, KeyAddressFileTest::slotHash)) {
                whole = file.path();
            }
            Path newer = folder.resolve((base.version() + 1) + KeyAddressFile.SUFFIX);
            Files.copy(whole, newer);
            try (var channel = Files.newByteChannel(newer, StandardOpenOption.WRITE)) {
                channel.truncate(Files.size(whole) - 8); // a crash in the middle of a write
            }
            assertThatThrownBy(() -> KeyAddressFile.open(newer))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("cut short");

            try (KeyAddressFile newest = KeyAddressFile.newest(folder)) {
                assertThat(newest.path()).isEqualTo(whole);
                assertThat(newest.get(hashOf("key-999"))).isEqualTo(999);
            }
            assertThat(newer).doesNotExist();
        }
    }
}
