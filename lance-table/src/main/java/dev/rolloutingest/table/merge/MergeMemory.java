package dev.rolloutingest.table.merge;

import dev.rolloutingest.table.MemoryBudget;
import java.util.Map;

/**
 * The memory one merge commit may use. On a base with its record_id index, lance-core 7.0.0 runs a
 * merge-insert as a hash join that collects the whole source into DataFusion's memory pool
 * ({@code LANCE_MEM_POOL_SIZE}, 100 MiB unless set in the environment), and a hash join cannot spill: a
 * commit whose source is larger fails with "Resources exhausted ... HashJoinInput", every time it is retried. Every budget that decides what one commit takes
 * (rows per pass, per round, per sealed generation) is held to half the pool; the rest is the join's own
 * tables and the rows it takes from the base.
 */
public final class MergeMemory {
    /** lance-core's default pool when {@code LANCE_MEM_POOL_SIZE} is not set. */
    public static final long DEFAULT_POOL_BYTES = 100L << 20;

    public static final String POOL_ENV = "LANCE_MEM_POOL_SIZE";

    private MergeMemory() {}

    /** The pool lance-core uses in this process: it reads the same variable once. */
    public static long poolBytes() {
        return poolBytes(System.getenv());
    }

    static long poolBytes(Map<String, String> env) {
        String value = env.get(POOL_ENV);
        if (value == null || value.isBlank()) {
            return DEFAULT_POOL_BYTES;
        }
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            return DEFAULT_POOL_BYTES; // lance-core ignores an unparsable value too and keeps its default
        }
    }

    /** Source bytes one merge commit may hold. */
    public static long commitBudgetBytes() {
        return poolBytes() / 2;
    }

    /** The budget of one merge commit's source: what the commits of a round are cut by. */
    static MemoryBudget commitBudget(long bytes) {
        // a negative pool (a value lance-core would not parse) admits nothing: each shard commits alone
        return MemoryBudget.bounded("a merge commit's source (half of " + POOL_ENV + ")", Math.max(0, bytes));
    }

    /**
     * Why a budget setting of {@code value} bytes is refused, or null when it fits: an unbounded (0) or larger
     * budget lets one commit fail forever.
     */
    public static String refusal(long value) {
        long budget = commitBudgetBytes();
        if (value > 0 && value <= budget) {
            return null;
        }
        return "must be between 1 and " + budget + " bytes, half of lance-core's merge memory pool (" + POOL_ENV + " = "
                + poolBytes() + "): one merge commit holds its whole source in that pool and fails above it, on every"
                + " retry. Lower this setting, or raise " + POOL_ENV + " in the environment of every app";
    }

    /** True when a Lance error is a merge commit that ran out of its memory pool. */
    public static boolean exhausted(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            String message = t.getMessage();
            if (message != null && message.contains("Resources exhausted")) {
                return true;
            }
        }
        return false;
    }
}
