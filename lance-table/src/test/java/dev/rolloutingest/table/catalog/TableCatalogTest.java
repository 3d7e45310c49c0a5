package dev.rolloutingest.table.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.TableFixtures;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import dev.rolloutingest.table.merge.MergeRequest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TableCatalogTest {
    @TempDir
    Path dir;

    private TableCatalog under(int max) {
        return TableCatalog.under(TableLocation.local(dir), TableSettings.DEFAULTS, new SimpleMeterRegistry(), max);
    }

    @Test
    void aTableIsCreatedOnFirstUseUnderTheRootAndReadableByAnotherCatalog() {
        try (TableCatalog tables = under(10)) {
            RolloutTable grpo = tables.createOrOpen("grpo");
            assertThat(grpo.location().uri()).isEqualTo(dir.resolve("grpo").toString());
            assertThat(tables.createOrOpen("grpo")).isSameAs(grpo);
            tables.createOrOpen("ppo");
        }
        try (TableCatalog other = under(10)) {
            assertThat(other.names()).containsExactly("grpo", "ppo");
            assertThat(other.open("grpo")).isPresent();
            assertThat(other.open("absent")).isEmpty();
            assertThatThrownBy(() -> other.require("absent")).isInstanceOf(RolloutTableException.NoSuchTable.class);
            assertThat(other.nameOf(dir.resolve("ppo").toString())).contains("ppo");
            assertThat(other.nameOf(dir.resolveSibling("elsewhere").toString())).isEmpty();
        }
    }

    @Test
    void theCapCountsTheTablesAlreadyThereAndRefusesOneMore() throws Exception {
        try (TableCatalog tables = under(2)) {
            tables.createOrOpen("a");
        }
        Files.createDirectories(dir.resolve("b")); // made by another process meanwhile
        try (TableCatalog tables = under(2)) {
            assertThat(tables.createOrOpen("a")).isNotNull();
            assertThatThrownBy(() -> tables.createOrOpen("c"))
                    .isInstanceOf(RolloutTableException.TableCap.class)
                    .hasMessageContaining("rollout.tables.max");
            assertThat(tables.names()).containsExactly("a", "b");
        }
    }

    @Test
    void aNameIsOnePathSegment() {
        assertThat(TableCatalog.nameProblem("grpo-7b_v2.1")).isNull();
        assertThat(TableCatalog.nameProblem("../etc")).isNotNull();
        assertThat(TableCatalog.nameProblem("a/b")).isNotNull();
        assertThat(TableCatalog.nameProblem(".hidden")).isNotNull();
        assertThat(TableCatalog.nameProblem("_mem_wal")).isNotNull();
        assertThat(TableCatalog.nameProblem("")).isNotNull();
        assertThat(TableCatalog.nameProblem("x".repeat(129))).isNotNull();
        try (TableCatalog tables = under(10)) {
            assertThatThrownBy(() -> tables.createOrOpen("a/b")).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aOneTableDeploymentIsACatalogOfThatTable() {
        RolloutTable table = RolloutTable.createOrOpen(
                TableLocation.local(dir.resolve("only")), TableSettings.DEFAULTS, new SimpleMeterRegistry());
        try (TableCatalog tables = TableCatalog.single(table)) {
            assertThat(tables.isSingle()).isTrue();
            assertThat(tables.names()).containsExactly(TableCatalog.SINGLE);
            assertThat(tables.only()).isSameAs(table);
            assertThat(tables.nameOf(table.location().uri())).contains(TableCatalog.SINGLE);
            assertThatThrownBy(() -> tables.createOrOpen("other")).isInstanceOf(IllegalArgumentException.class);
        }
    }

    /** A table that merged once and answered a lookup: it holds its merge key filter and read catalog. */
    private static RolloutTable used(TableCatalog tables, String name, long first) {
        RolloutTable table = tables.createOrOpen(name);
        TableFixtures.write(table, 0, first, first + 9, 10);
        table.merges().pass(MergeRequest.of(ShardId.of(TableFixtures.TOPIC, 0)).limits(0, 0));
        assertThat(table.get("exp-3")).isPresent();
        return table;
    }

    @Test
    void idleTablesLetGoOfWhatTheyKeepAndBuildItAgainWhenUsed() throws Exception {
        TableSettings settings = TableSettings.DEFAULTS.with(TableSettings.TABLES_IDLE_RELEASE_MS, 1_000L);
        try (TableCatalog tables =
                TableCatalog.under(TableLocation.local(dir), settings, new SimpleMeterRegistry(), 10)) {
            RolloutTable a = used(tables, "a", 0);
            // right after its use: on a loaded machine, using the next table can take longer than the idle release
            assertThat(a.resident().bytes())
                    .as("a merge key filter, at least a million keys' worth")
                    .isGreaterThan(1 << 20);
            RolloutTable b = used(tables, "b", 0);
            Thread.sleep(1_500);
            tables.releaseIdleTables();
            assertThat(a.resident().bytes()).isZero();
            assertThat(b.resident().bytes()).isZero();

            // used again: the filter is built anew from the base, and reads and merges are right
            used(tables, "a", 10);
            assertThat(a.get("exp-3").orElseThrow().sourceOffset()).isEqualTo(13);
            assertThat(a.countRows()).isEqualTo(10);
            assertThat(a.resident().bytes()).isGreaterThan(1 << 20);
            assertThat(b.get("exp-3").orElseThrow().sourceOffset()).isEqualTo(3);
        }
    }

    @Test
    void overTheBudgetTheLeastRecentlyUsedIdleTablesLetGoFirst() throws Exception {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (TableCatalog tables = TableCatalog.under(
                TableLocation.local(dir),
                TableSettings.DEFAULTS.with(TableSettings.TABLES_MEMORY_BUDGET_BYTES, 0L),
                meters,
                10)) {
            RolloutTable a = used(tables, "a", 0);
            Thread.sleep(150);
            RolloutTable b = used(tables, "b", 0);
            Thread.sleep(150);
            RolloutTable c = used(tables, "c", 0);
            Thread.sleep(250);
            long one = c.resident().bytes();
            try (ResidentBudget budget =
                    new ResidentBudget(tables::opened, one + one / 2, Duration.ZERO, Duration.ofMillis(100), meters)) {
                assertThat(budget.check()).isEqualTo(2);
            }
            assertThat(a.resident().bytes()).as("least recently used").isZero();
            assertThat(b.resident().bytes()).isZero();
            assertThat(c.resident().bytes()).as("the rest fits the budget").isEqualTo(one);
            assertThat(meters.get("rollout.tables.releases").counter().count()).isEqualTo(2);
        }
    }

    @Test
    void theTablesWithASealAtAnOffsetAreFoundWithoutOpeningAny() {
        try (TableCatalog tables = under(10)) {
            TableFixtures.write(tables.createOrOpen("a"), 0, 0, 9, 10);
            TableFixtures.write(tables.createOrOpen("b"), 0, 10, 19, 10);
            TableFixtures.write(tables.createOrOpen("c"), 0, 0, 4, 5);
            tables.createOrOpen("d");
        }
        String shard = ShardId.of(TableFixtures.TOPIC, 0);
        try (TableCatalog restarted = under(10)) {
            assertThat(restarted.withSealStartingAt(shard, 0)).containsExactly("a", "c");
            assertThat(restarted.withSealStartingAt(shard, 10)).containsExactly("b");
            assertThat(restarted.withSealStartingAt(shard, 20)).isEmpty();
            assertThat(restarted.withSealStartingAt(ShardId.of(TableFixtures.TOPIC, 1), 0))
                    .isEmpty();
            assertThat(restarted.opened()).as("no table opened to find them").isEmpty();
        }
    }
}
