package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rolloutingest.embedded.ChildJvm;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.junit.jupiter.api.Test;

/** Each case in a JVM of its own: Netty reads its switch once per process. */
class DirectBuffersTest {
    @Test
    void largeBuffersSkipTheJdksZeroingAndStillReadAsWritten() throws Exception {
        assertThat(probe(true)).isEqualTo("unzeroed=true rows=ok");
    }

    @Test
    void withoutItTheJdkZeroesThem() throws Exception {
        assertThat(probe(false)).isEqualTo("unzeroed=false rows=ok");
    }

    @Test
    void aValueSetOnTheCommandLineWins() throws Exception {
        assertThat(probe(true, "-D" + DirectBuffers.NETTY_REFLECTION + "=false"))
                .isEqualTo("unzeroed=false rows=ok");
    }

    private static String probe(boolean allocateUnzeroed, String... jvmArgs) throws IOException {
        Path log = Path.of("target", "direct-buffers", UUID.randomUUID() + ".log");
        try (ChildJvm probe =
                ChildJvm.start(Probe.class, List.of(Boolean.toString(allocateUnzeroed)), Map.of(), log, jvmArgs)) {
            assertThat(probe.waitFor(60)).isZero();
        }
        List<String> lines = Files.readAllLines(log);
        return lines.get(lines.size() - 1);
    }

    /**
     * Fills a large buffer with ones and frees it, so the next large allocation may well reuse that memory, then
     * writes a column over 4 MiB with nulls in it and reads it back.
     */
    public static final class Probe {
        public static void main(String[] args) {
            if (Boolean.parseBoolean(args[0])) {
                DirectBuffers.allocateUnzeroed();
            }
            int rows = 6_000;
            byte[] value = new byte[1_024];
            try (BufferAllocator allocator = new RootAllocator()) {
                try (ArrowBuf dirty = allocator.buffer(16L << 20)) {
                    dirty.setOne(0, dirty.capacity());
                }
                boolean ok = true;
                try (VarBinaryVector column = new VarBinaryVector("payload", allocator)) {
                    column.allocateNew(rows * (long) value.length, rows);
                    for (int row = 0; row < rows; row++) {
                        if (row % 3 == 0) {
                            column.setNull(row);
                        } else {
                            value[0] = (byte) row;
                            column.setSafe(row, value);
                        }
                    }
                    column.setValueCount(rows);
                    for (int row = 0; row < rows; row++) {
                        byte[] read = column.get(row);
                        ok &= row % 3 == 0 ? read == null : read.length == value.length && read[0] == (byte) row;
                    }
                }
                System.out.println(
                        "unzeroed=" + PlatformDependent.useDirectBufferNoCleaner() + " rows=" + (ok ? "ok" : "wrong"));
            }
        }
    }
}
