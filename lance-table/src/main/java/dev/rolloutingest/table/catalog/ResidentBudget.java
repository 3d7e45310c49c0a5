package dev.rolloutingest.table.catalog;

import dev.rolloutingest.table.MemoryBudget;
import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the memory the open tables of a catalog hold between uses ({@link ResidentMemory#bytes}: merge key
 * filters, read catalogs) under one budget, so a process that has served many tables does not keep every one of them
 * built: a table unused for the idle release lets go of it, and over the budget the least recently used tables that
 * are idle for two checks let go of theirs, until the rest fits. A released table builds what it needs again on its
 * next merge or read. Tables in use are never released: their own memory may exceed the budget (the gauge shows it).
 * Each check counts what the tables hold in a fresh {@link MemoryBudget} (memory already held: counted, never
 * refused) and releases from it what it lets go of.
 */
final class ResidentBudget implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ResidentBudget.class);

    private final Supplier<Map<String, RolloutTable>> tables;
    private final long budgetBytes;
    private final Duration idleRelease;
    private final Duration checkEvery;
    private final Counter releases;
    private final ScheduledExecutorService checker;
    private volatile MemoryBudget lastCheck;

    /**
     * @param budgetBytes the open tables' resident memory, together (0 = no budget)
     * @param idleRelease a table idle this long is released whatever the budget (0 = only over the budget)
     */
    ResidentBudget(
            Supplier<Map<String, RolloutTable>> tables,
            long budgetBytes,
            Duration idleRelease,
            Duration checkEvery,
            MeterRegistry meters) {
        this.tables = tables;
        this.budgetBytes = budgetBytes;
        this.lastCheck = resident();
        this.idleRelease = idleRelease;
        this.checkEvery = checkEvery;
        this.releases = Counter.builder("rollout.tables.releases")
                .description("Open tables that let go of their key filters and handles (idle, or over"
                        + " rollout.tables.memory.budget.bytes); they build them again when used")
                .register(meters);
        Gauge.builder("rollout.tables.resident.bytes", this, b -> b.lastCheck.used())
                .description("Memory the open tables keep between uses (merge key filters, read catalogs), all tables"
                        + " together, at the last check")
                .baseUnit("bytes")
                .register(meters);
        this.checker = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "table-memory");
            thread.setDaemon(true);
            return thread;
        });
        if (budgetBytes > 0 || !idleRelease.isZero()) {
            checker.scheduleWithFixedDelay(
                    this::checkQuietly, checkEvery.toMillis(), checkEvery.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private MemoryBudget resident() {
        return MemoryBudget.boundedUnlessZero(TableSettings.TABLES_MEMORY_BUDGET_BYTES, budgetBytes);
    }

    /** The check interval for an idle release: a quarter of it, between 100 ms and 10 s. */
    static Duration checkInterval(Duration idleRelease) {
        long quarter = idleRelease.isZero() ? 10_000 : idleRelease.toMillis() / 4;
        return Duration.ofMillis(Math.max(100, Math.min(10_000, quarter)));
    }

    private void checkQuietly() {
        try {
            check();
        } catch (RuntimeException e) {
            log.warn("Checking the open tables' memory failed: {}", e.toString());
        }
    }

    /** Releases idle tables, then the least recently used idle ones while over the budget; returns how many. */
    int check() {
        record Held(String name, RolloutTable table, long bytes, Duration idle) {}
        List<Held> held = new ArrayList<>();
        MemoryBudget resident = resident();
        for (Map.Entry<String, RolloutTable> open : tables.get().entrySet()) {
            long bytes = open.getValue().resident().bytes();
            held.add(new Held(
                    open.getKey(),
                    open.getValue(),
                    bytes,
                    open.getValue().resident().idleFor()));
            resident.count(bytes);
        }
        held.sort(Comparator.comparing(Held::idle).reversed()); // least recently used first
        int released = 0;
        Duration idleEnough = checkEvery.multipliedBy(2);
        for (Held table : held) {
            boolean idle = !idleRelease.isZero() && table.idle().compareTo(idleRelease) >= 0;
            boolean over = resident.over() && table.idle().compareTo(idleEnough) >= 0;
            if (table.bytes() > 0 && (idle || over)) {
                table.table().resident().release();
                resident.release(table.bytes());
                released++;
                log.debug(
                        "Table {}: released {} bytes ({})",
                        table.name(),
                        table.bytes(),
                        idle ? "idle for " + table.idle().toSeconds() + " s" : "over the tables' memory budget");
            }
        }
        lastCheck = resident;
        releases.increment(released);
        return released;
    }

    @Override
    public void close() {
        checker.shutdownNow();
    }
}
