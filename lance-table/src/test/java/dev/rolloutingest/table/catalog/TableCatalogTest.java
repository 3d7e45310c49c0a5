package dev.rolloutingest.table.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.RolloutTableException;
import dev.rolloutingest.table.TableLocation;
import dev.rolloutingest.table.TableSettings;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
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
}
