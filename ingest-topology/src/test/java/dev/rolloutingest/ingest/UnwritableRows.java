package dev.rolloutingest.ingest;

import dev.rolloutingest.table.rows.RolloutSchema;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/** Test fault: makes the table refuse every write holding a record_id with a prefix, as Lance would a bad row. */
final class UnwritableRows {
    private UnwritableRows() {}

    static Function<VectorSchemaRoot, String> withRecordIdPrefix(String prefix) {
        return batch -> {
            VarCharVector ids = (VarCharVector) batch.getVector(RolloutSchema.RECORD_ID);
            for (int i = 0; i < batch.getRowCount(); i++) {
                if (!ids.isNull(i) && new String(ids.get(i), StandardCharsets.UTF_8).startsWith(prefix)) {
                    return "injected fault: the table refuses record_id "
                            + new String(ids.get(i), StandardCharsets.UTF_8);
                }
            }
            return null;
        };
    }
}
