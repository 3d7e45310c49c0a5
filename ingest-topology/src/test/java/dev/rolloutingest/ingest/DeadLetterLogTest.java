package dev.rolloutingest.ingest;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class DeadLetterLogTest {
    private static final Pattern MORE = Pattern.compile("(\\d+) more dead letters");

    @Test
    void aFloodOfDeadLettersWritesABoundedNumberOfLinesThatCountEveryRecord() {
        AtomicLong clock = new AtomicLong();
        List<String> lines = new ArrayList<>();
        DeadLetterLog log = new DeadLetterLog(10_000, clock::get, lines::add);
        // 100,000 bad records of two reasons over one minute, the partitions' ticks flushing every 100 ms
        for (int i = 0; i < 100_000; i++) {
            clock.set(i * 600_000L); // 0.6 ms apart: 60 s in all
            String reason = i % 10 == 0 ? "not-avro" : "key-mismatch";
            int n = i;
            log.deadLettered(reason, () -> "record " + n + " (" + reason + ")");
            if (i % 166 == 0) {
                log.flush();
            }
        }
        clock.addAndGet(10_000_000_000L);
        log.flush();

        // 60 s / 10 s per reason: about 7 lines each, not 100,000
        assertThat(lines).hasSizeLessThanOrEqualTo(2 * (60 / 10 + 2));
        // each line stands for its own record (if it names one) plus the ones it counts
        long standalone = lines.stream().filter(l -> l.startsWith("record ")).count();
        long counted = lines.stream()
                .map(MORE::matcher)
                .filter(Matcher::find)
                .mapToLong(m -> Long.parseLong(m.group(1)))
                .sum();
        assertThat(standalone + counted).isEqualTo(100_000);
        assertThat(lines.get(0)).isEqualTo("record 0 (not-avro)");
        assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("record 1 (key-mismatch)"));
    }

    @Test
    void aZeroIntervalLogsEveryRecord() {
        List<String> lines = new ArrayList<>();
        DeadLetterLog log = new DeadLetterLog(0, () -> 0L, lines::add);
        for (int i = 0; i < 5; i++) {
            log.deadLettered("not-avro", () -> "line");
        }
        assertThat(lines).hasSize(5);
    }
}
