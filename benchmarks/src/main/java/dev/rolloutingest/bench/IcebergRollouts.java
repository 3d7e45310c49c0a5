package dev.rolloutingest.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

/**
 * The rollout contract (schemas' Rollout.avsc) as an Iceberg table in a Hadoop catalog on local disk: what the
 * peer-iceberg suite creates before Iceberg's Kafka Connect sink starts, and how it reads the table the sink commits
 * to (the current snapshot's row count, every record_id).
 *
 * <p>Types as the contract's: created_at (timestamp-micros) is a timestamptz, reward and advantage are floats,
 * binary_payload is binary. Required fields are required columns, unions with null optional ones; list elements and
 * map values are required (the contract's arrays and maps hold no nulls). Unpartitioned, Parquet, format 2.
 */
final class IcebergRollouts {
    static final TableIdentifier TABLE = TableIdentifier.of(Namespace.of("bench"), "rollouts");

    private IcebergRollouts() {}

    static Schema schema() {
        return new Schema(
                Types.NestedField.required(1, "record_id", Types.StringType.get()),
                Types.NestedField.required(2, "experiment", Types.StringType.get()),
                Types.NestedField.required(3, "rollout_id", Types.StringType.get()),
                Types.NestedField.optional(4, "problem_id", Types.StringType.get()),
                Types.NestedField.required(5, "sequence_order", Types.IntegerType.get()),
                Types.NestedField.required(6, "role", Types.StringType.get()),
                Types.NestedField.required(7, "created_at", Types.TimestampType.withZone()),
                Types.NestedField.optional(8, "content", Types.StringType.get()),
                Types.NestedField.required(9, "input_tokens", Types.ListType.ofRequired(18, Types.IntegerType.get())),
                Types.NestedField.required(10, "output_tokens", Types.ListType.ofRequired(19, Types.IntegerType.get())),
                Types.NestedField.required(11, "output_logprobs", Types.ListType.ofRequired(20, Types.FloatType.get())),
                Types.NestedField.optional(12, "reward", Types.FloatType.get()),
                Types.NestedField.optional(13, "advantage", Types.FloatType.get()),
                Types.NestedField.optional(14, "policy_version", Types.LongType.get()),
                Types.NestedField.required(15, "include_in_training", Types.BooleanType.get()),
                Types.NestedField.required(
                        16,
                        "metadata",
                        Types.MapType.ofRequired(21, 22, Types.StringType.get(), Types.StringType.get())),
                Types.NestedField.optional(17, "binary_payload", Types.BinaryType.get()));
    }

    /** The warehouse as the sink's iceberg.catalog.warehouse takes it, and as {@link #catalog} opens it. */
    static String warehouseUri(Path warehouse) {
        return warehouse.toAbsolutePath().toUri().toString();
    }

    static HadoopCatalog catalog(Path warehouse) {
        HadoopCatalog catalog = new HadoopCatalog();
        catalog.setConf(new Configuration());
        catalog.initialize("bench", Map.of("warehouse", warehouseUri(warehouse)));
        return catalog;
    }

    /** Creates {@link #TABLE}, empty; fails if it exists (every run starts from an emptied directory). */
    static Table create(HadoopCatalog catalog) {
        if (!catalog.namespaceExists(TABLE.namespace())) {
            catalog.createNamespace(TABLE.namespace());
        }
        return catalog.createTable(
                TABLE,
                schema(),
                PartitionSpec.unpartitioned(),
                Map.of(TableProperties.DEFAULT_FILE_FORMAT, "parquet", TableProperties.FORMAT_VERSION, "2"));
    }

    /** Rows of the table's current snapshot (its summary's total-records), after a refresh: 0 before a commit. */
    static long committedRows(Table table) {
        table.refresh();
        Snapshot snapshot = table.currentSnapshot();
        return snapshot == null ? 0 : Long.parseLong(snapshot.summary().getOrDefault("total-records", "0"));
    }

    static int snapshots(Table table) {
        int n = 0;
        for (Snapshot ignored : table.snapshots()) {
            n++;
        }
        return n;
    }

    /** Every record_id of the current snapshot, through Iceberg's generic reader. */
    static void readIds(Table table, Consumer<String> id) throws IOException {
        try (CloseableIterable<Record> rows =
                IcebergGenerics.read(table).select("record_id").build()) {
            for (Record row : rows) {
                id.accept((String) row.getField("record_id"));
            }
        }
    }
}
