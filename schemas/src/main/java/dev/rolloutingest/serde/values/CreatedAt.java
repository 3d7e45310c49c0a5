package dev.rolloutingest.serde.values;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
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
        Instant instant;
        try {
            instant = OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeException withOffset) {
            instant = LocalDateTime.parse(text).toInstant(ZoneOffset.UTC);
        }
        return ofSeconds(instant.getEpochSecond(), instant.getNano());
    }
}
