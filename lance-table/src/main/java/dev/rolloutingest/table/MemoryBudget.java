package dev.rolloutingest.table;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Bytes of one use of memory held under a limit, named for the logs and errors that speak of it. Every bound on memory
 * the apps keep is one of these; what each use does about it (refuse, seal early, let go of the least recently used)
 * is its own policy around it.
 *
 * <ul>
 *   <li>{@link #tryAdmit}: takes bytes only if they fit; refused, the caller does without them (nothing waits: no use
 *       blocks for room today, so there is no lock to wait on);
 *   <li>{@link #count}: bytes already held, counted whether they fit or not; the use then lets go of something while
 *       {@link #over};
 *   <li>{@link #release}: bytes let go of; more than is counted is a bookkeeping error and is refused.
 * </ul>
 *
 * Thread-safe: one atomic counter, so a budget may be shared by threads without a lock of its own.
 */
public final class MemoryBudget {
    private final String name;
    private final long limit;
    private final boolean bounded;
    private final AtomicLong used = new AtomicLong();

    private MemoryBudget(String name, long limit, boolean bounded) {
        if (limit < 0) {
            throw new IllegalArgumentException(name + ": a limit of " + limit + " bytes");
        }
        this.name = name;
        this.limit = limit;
        this.bounded = bounded;
    }

    /** At most {@code limitBytes}; 0 admits nothing (a setting where 0 means "keep none"). */
    public static MemoryBudget bounded(String name, long limitBytes) {
        return new MemoryBudget(name, limitBytes, true);
    }

    /** At most {@code limitBytes}, or no limit when it is 0 (a setting where 0 means "off"). */
    public static MemoryBudget boundedUnlessZero(String name, long limitBytes) {
        return new MemoryBudget(name, limitBytes, limitBytes > 0);
    }

    public String name() {
        return name;
    }

    /** The limit in bytes as set (0 with no limit). */
    public long limit() {
        return limit;
    }

    public boolean isBounded() {
        return bounded;
    }

    public long used() {
        return used.get();
    }

    /** Bytes {@link #tryAdmit} would still take (none when over; {@link Long#MAX_VALUE} with no limit). */
    public long room() {
        return bounded ? Math.max(0, limit - used.get()) : Long.MAX_VALUE;
    }

    /** True when what is counted exceeds the limit (only {@link #count} takes it there). */
    public boolean over() {
        return bounded && used.get() > limit;
    }

    /** Counts {@code bytes} if they fit under the limit; false: nothing counted, the caller does without them. */
    public boolean tryAdmit(long bytes) {
        requireNotNegative(bytes);
        if (!bounded) {
            used.addAndGet(bytes);
            return true;
        }
        for (long held = used.get(); ; held = used.get()) {
            if (bytes > limit - held) { // not held + bytes > limit: no overflow
                return false;
            }
            if (used.compareAndSet(held, held + bytes)) {
                return true;
            }
        }
    }

    /** Counts {@code bytes} already held, whether they fit or not. */
    public void count(long bytes) {
        requireNotNegative(bytes);
        used.addAndGet(bytes);
    }

    /** Uncounts {@code bytes} let go of. */
    public void release(long bytes) {
        requireNotNegative(bytes);
        for (long held = used.get(); ; held = used.get()) {
            if (bytes > held) {
                // a release without its count: counting on would hide it and drift the budget for good
                throw new IllegalStateException(name + ": releasing " + bytes + " bytes, only " + held + " counted");
            }
            if (used.compareAndSet(held, held - bytes)) {
                return;
            }
        }
    }

    private void requireNotNegative(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException(name + ": " + bytes + " bytes");
        }
    }

    @Override
    public String toString() {
        return name + ": " + used.get() + (bounded ? " of " + limit : "") + " bytes";
    }
}
