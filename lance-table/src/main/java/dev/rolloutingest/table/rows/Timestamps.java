package dev.rolloutingest.table.rows;

import java.time.Instant;

/** The table's timestamps: microseconds since the epoch, as Arrow's {@code timestamp[us, UTC]} columns hold them. */
public final class Timestamps {
    private Timestamps() {}

    /**
     * Exact for every instant a timestamp-micros long can hold, Long.MIN_VALUE included: below zero the
     * seconds are taken one higher first, so the intermediate product cannot overflow before the sum fits.
     */
    public static long micros(Instant instant) {
        long seconds = instant.getEpochSecond();
        long micros = instant.getNano() / 1_000;
        if (seconds < 0 && micros > 0) {
            return Math.addExact(Math.multiplyExact(seconds + 1, 1_000_000L), micros - 1_000_000L);
        }
        return Math.addExact(Math.multiplyExact(seconds, 1_000_000L), micros);
    }

    public static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }
}
