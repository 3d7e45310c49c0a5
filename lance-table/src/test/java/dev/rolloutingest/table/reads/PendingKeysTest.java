package dev.rolloutingest.table.reads;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.table.rows.NewestWins;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.Test;

/** The check a bulk pass makes of each base row's key against the pending keys, straight from Arrow memory. */
class PendingKeysTest {
    @Test
    void aKeyHashesTheSameFromArrowMemoryAsFromItsBytesWhateverItsLength() {
        try (BufferAllocator allocator = new RootAllocator();
                ArrowBuf buffer = allocator.buffer(64)) {
            assertThat(PendingKeys.hash(buffer.memoryAddress(), 0)).isEqualTo(PendingKeys.hash(new byte[0]));
            for (int length = 0; length <= 40; length++) {
                byte[] bytes = ("é" + "k".repeat(length)).getBytes(StandardCharsets.UTF_8); // 2..42 bytes
                buffer.setBytes(3, bytes); // at an odd address: reads by word need no alignment
                assertThat(PendingKeys.hash(buffer.memoryAddress() + 3, bytes.length))
                        .as("length %d", bytes.length)
                        .isEqualTo(PendingKeys.hash(bytes));
            }
        }
    }

    @Test
    void everyPendingKeyIsFoundAndNoOtherKey() {
        Map<String, NewestWins.Order> newest = new HashMap<>();
        for (int k = 0; k < 10_000; k++) {
            newest.put("exp-" + k * 3, new NewestWins.Order(0, k, 0));
            newest.put(
                    UUID.nameUUIDFromBytes(new byte[] {(byte) k, (byte) (k >> 8)})
                            .toString(),
                    newest.get("exp-0"));
        }
        PendingKeys pending = PendingKeys.of(newest);
        try (BufferAllocator allocator = new RootAllocator();
                ArrowBuf buffer = allocator.buffer(64)) {
            int falseMatches = 0;
            for (int k = 0; k < 30_000; k++) {
                String key = "exp-" + k;
                byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
                buffer.setBytes(0, bytes);
                boolean may = pending.mayHold(buffer.memoryAddress(), bytes.length);
                if (newest.containsKey(key)) {
                    assertThat(may).as(key).isTrue();
                } else if (may) {
                    falseMatches++;
                }
            }
            for (String key : newest.keySet()) {
                byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
                buffer.setBytes(0, bytes);
                assertThat(pending.mayHold(buffer.memoryAddress(), bytes.length))
                        .as(key)
                        .isTrue();
            }
            assertThat(falseMatches)
                    .as("keys not pending that matched a pending key's hash")
                    .isZero();
        }
    }
}
