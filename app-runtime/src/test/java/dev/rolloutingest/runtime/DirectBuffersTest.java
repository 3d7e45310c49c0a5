package dev.rolloutingest.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
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

    private static String probe(boolean allocateUnzeroed, String... jvmArgs) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElse("java"), "--add-opens=java.base/java.nio=ALL-UNNAMED"));
        command.addAll(List.of(jvmArgs));
        command.addAll(List.of(
                "-cp",
                System.getProperty("java.class.path"),
                Probe.class.getName(),
                Boolean.toString(allocateUnzeroed)));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        String[] lines = out.strip().split("\n");
        return lines[lines.length - 1];
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
