package dev.rolloutingest.serde.values;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.DateTimeException;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CreatedAtTest {
    private static final String[] OFFSETS = {
        "Z",
        "",
        "+00:00",
        "-00:00",
        "+05:30",
        "-08:00",
        "+18:00",
        "-18:00",
        "+14:45",
        "z",
        "+18:01",
        "+19:00",
        "+5:30",
        "+05:3",
        "+0530",
        "+05",
        "+05:30:15",
        "Z ",
        "ZZ",
        "-23:59"
    };

    @Test
    void theHandReadFormGivesTheJdksInstantAndEveryOtherTextIsTheJdksToRead() {
        SplittableRandom random = new SplittableRandom(52);
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < 40_000; i++) {
            int year = random.nextInt(10) == 0 ? random.nextInt(10_000) : 1960 + random.nextInt(100);
            int month = random.nextInt(20) == 0 ? random.nextInt(14) : 1 + random.nextInt(12);
            int day = random.nextInt(10) == 0 ? random.nextInt(33) : 1 + random.nextInt(28);
            int hour = random.nextInt(20) == 0 ? 24 + random.nextInt(2) : random.nextInt(24);
            int minute = random.nextInt(30) == 0 ? 60 : random.nextInt(60);
            int second = random.nextInt(30) == 0 ? 60 : random.nextInt(60);
            StringBuilder text = new StringBuilder(String.format(
                    "%04d-%02d-%02d%s%02d:%02d", year, month, day, random.nextInt(30) == 0 ? "t" : "T", hour, minute));
            if (random.nextInt(20) != 0) { // seconds are optional to ISO-8601
                text.append(String.format(":%02d", second));
                int fraction = random.nextInt(12);
                if (fraction > 0) {
                    text.append('.');
                    for (int k = 1; k < fraction; k++) {
                        text.append((char) ('0' + random.nextInt(10)));
                    }
                }
            }
            text.append(OFFSETS[random.nextInt(OFFSETS.length)]);
            texts.add(text.toString());
        }
        int handRead = 0;
        for (String text : texts) {
            Long expected;
            try {
                expected = CreatedAt.ofIsoByJdk(text);
            } catch (DateTimeException e) {
                expected = null;
            }
            if (CreatedAt.ofPlainIso(text) != CreatedAt.NOT_PLAIN) {
                handRead++;
            }
            if (expected == null) {
                assertThatThrownBy(() -> CreatedAt.ofIso(text)).as(text).isInstanceOf(DateTimeException.class);
            } else {
                assertThat(CreatedAt.ofIso(text)).as(text).isEqualTo(expected);
            }
        }
        // most texts take the hand-read path: it is what the comparison above checks
        assertThat(handRead).as("texts read by hand").isGreaterThan(texts.size() / 4);
    }

    @Test
    void whatProducersWriteIsReadByHand() {
        for (String text : List.of(
                "2026-12-06T02:13:23Z",
                "2026-12-06T02:13:23.123456Z",
                "2026-12-06T02:13:23.123456789+01:00",
                "2024-02-29T23:59:59.5-08:00",
                "2026-12-06T02:13:23")) {
            assertThat(CreatedAt.ofPlainIso(text)).as(text).isEqualTo(CreatedAt.ofIsoByJdk(text));
        }
    }
}
