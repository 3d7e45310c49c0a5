package dev.rolloutingest.table;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.junit.jupiter.api.Test;
import org.lance.Dataset;

class ScratchStructTest {
    @Test
    void probe() throws Exception {
        try (RolloutTable table = TableFixtures.localTable("scratch", new SimpleMeterRegistry())) {
            Field f = new Field(
                    "detail",
                    FieldType.nullable(ArrowType.Struct.INSTANCE),
                    List.of(new Field("tool", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)));
            try (RootAllocator a = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(a)
                            .uri(table.location().uri())
                            .build()) {
                base.addColumns(List.of(f));
            }
            try (RootAllocator a = new RootAllocator();
                    Dataset base = Dataset.open()
                            .allocator(a)
                            .uri(table.location().uri())
                            .build()) {
                Field d = base.getSchema().findField("detail");
                System.out.println("DETAIL nullable=" + d.isNullable() + " children=" + d.getChildren());
                System.out.println("LANCE "
                        + base.getLanceSchema().fields().stream()
                                .filter(x -> x.getName().equals("detail"))
                                .toList());
            }
        }
    }
}
