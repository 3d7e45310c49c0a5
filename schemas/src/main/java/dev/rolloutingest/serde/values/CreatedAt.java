package dev.rolloutingest.serde.values;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.YearMonth;
import java.time.ZoneOffset;

/**
 * created_at in each form producers send it, as the contract's microseconds since the epoch: the same conversions
 * for JSON and Protobuf values. Each throws {@link ArithmeticException} when the instant is beyond 64-bit
 * microseconds; the decoders word the wrong-type error, as each names what it accepts.
 */
final class CreatedAt {
    private static final BigDecimal THOUSAND = BigDecimal.valueOf(1000);

    private CreatedAt() {}

    static long ofMillis(long millis) {
        return Math.multiplyExact(millis, 1000L);
    }

    /** Fractional milliseconds, rounded half-even to the microsecond. */
    static long ofMillis(BigDecimal millis) {
        return millis.multiply(THOUSAND).setScale(0, RoundingMode.HALF_EVEN).longValueExact();
    }

    /** A google.protobuf.Timestamp's fields; nanoseconds are cut (toward zero) to microseconds. */
    static long ofSeconds(long seconds, long nanos) {
        return Math.addExact(Math.multiplyExact(seconds, 1_000_000L), nanos / 1000);
    }

    /**
     * An ISO-8601 date-time with an offset or Z, or without one (UTC).
     *
     * @throws DateTimeException when the text is neither
     */
    static long ofIso(String text) {
        long micros = ofPlainIso(text);
        return micros != NOT_PLAIN ? micros : ofIsoByJdk(text);
    }

    /** {@link #ofIso} by the JDK's parsers alone: any ISO-8601 form they take. */
    static long ofIsoByJdk(String text) {
        Instant instant;
        try {
            instant = OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeException withOffset) {
            instant = LocalDateTime.parse(text).toInstant(ZoneOffset.UTC);
        }
        return ofSeconds(instant.getEpochSecond(), instant.getNano());
    }

    static final long NOT_PLAIN = Long.MIN_VALUE;

    /**
     * The form nearly every producer writes ({@code 2026-12-06T02:13:23.123456Z}: a four-digit year, seconds, up to
     * nine fraction digits, then Z, {@code ±HH:MM} or nothing) read by hand: {@link OffsetDateTime#parse} costs more
     * than the rest of a JSON row's fields. {@link #NOT_PLAIN} for any other text, valid or not, which the JDK's
     * parser then reads with its full rules; for a text this reads, both give the same instant.
     */
    static long ofPlainIso(String s) {
        int n = s.length();
        if (n < 19
                || s.charAt(4) != '-'
                || s.charAt(7) != '-'
                || s.charAt(10) != 'T'
                || s.charAt(13) != ':'
                || s.charAt(16) != ':') {
            return NOT_PLAIN;
        }
        int year = digits(s, 0, 4);
        int month = digits(s, 5, 2);
        int day = digits(s, 8, 2);
        int hour = digits(s, 11, 2);
        int minute = digits(s, 14, 2);
        int second = digits(s, 17, 2);
        if ((year | month | day | hour | minute | second) < 0
                || month < 1
                || month > 12
                || day < 1
                || day > 28 && day > YearMonth.of(year, month).lengthOfMonth()
                || hour > 23
                || minute > 59
                || second > 59) {
            return NOT_PLAIN;
        }
        int i = 19;
        int nanos = 0;
        if (i < n && s.charAt(i) == '.') {
            int start = ++i;
            while (i < n && i - start < 9 && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                nanos = nanos * 10 + (s.charAt(i++) - '0');
            }
            int count = i - start;
            if (count == 0) {
                return NOT_PLAIN;
            }
            for (int k = count; k < 9; k++) {
                nanos *= 10;
            }
        }
        int offsetSeconds;
        if (i == n) {
            offsetSeconds = 0; // no offset: UTC
        } else if (i + 1 == n && s.charAt(i) == 'Z') {
            offsetSeconds = 0;
        } else if (i + 6 == n && (s.charAt(i) == '+' || s.charAt(i) == '-') && s.charAt(i + 3) == ':') {
            int oh = digits(s, i + 1, 2);
            int om = digits(s, i + 4, 2);
            if ((oh | om) < 0 || oh > 18 || om > 59 || oh == 18 && om > 0) {
                return NOT_PLAIN;
            }
            offsetSeconds = (s.charAt(i) == '-' ? -1 : 1) * (oh * 3600 + om * 60);
        } else {
            return NOT_PLAIN;
        }
        long epochDay = LocalDate.of(year, month, day).toEpochDay();
        long seconds = epochDay * 86_400L + hour * 3600L + minute * 60L + second - offsetSeconds;
        return seconds * 1_000_000L + nanos / 1000;
    }

    /** The decimal value of {@code count} ASCII digits at {@code from}, -1 when one is not a digit. */
    private static int digits(String s, int from, int count) {
        int value = 0;
        for (int i = from; i < from + count; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            value = value * 10 + (c - '0');
        }
        return value;
    }
}
