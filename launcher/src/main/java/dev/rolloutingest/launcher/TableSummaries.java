package dev.rolloutingest.launcher;

import dev.rolloutingest.table.RolloutTable;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** What `tables` and GET /tables say of each table: rows, pending generations, the base's last commit, its size. */
final class TableSummaries {
    private TableSummaries() {}

    static List<Map<String, Object>> describeAll(TableCatalog tables) {
        List<Map<String, Object>> all = new ArrayList<>();
        for (String name : tables.names()) {
            Optional<RolloutTable> table = tables.open(name);
            if (table.isPresent()) {
                all.add(describe(name, table.get()));
            } else {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("table", name);
                row.put("error", "not a rollout table (yet): no dataset with MemWAL there");
                all.add(row);
            }
        }
        return all;
    }

    static Map<String, Object> describe(String name, RolloutTable table) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("table", name);
        row.put("uri", table.location().uri());
        try {
            int pending = 0;
            List<String> shards = table.generations().shards();
            for (String shard : shards) {
                pending += table.generations().pending(shard).size();
            }
            RolloutTable.BaseState base = table.baseState();
            row.put("rows", table.countRows());
            row.put("base_rows", table.countBaseRows());
            row.put("shards", shards.size());
            row.put("pending_generations", pending);
            row.put("base_version", base.version());
            row.put("last_commit", base.committedAt().toString());
            row.put("data_bytes", base.dataBytes());
        } catch (RuntimeException e) {
            row.put("error", e.getMessage());
        }
        return row;
    }
}
