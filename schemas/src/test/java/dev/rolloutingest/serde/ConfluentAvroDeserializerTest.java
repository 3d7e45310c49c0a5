package dev.rolloutingest.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rolloutingest.schemas.Rollout;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Avro values whose lengths and counts are past what Avro reads are the record's fault, not-avro. */
class ConfluentAvroDeserializerTest {
    private final StubRegistry registry =
            new StubRegistry().schema(1, null, Rollout.getClassSchema().toString());

    @AfterEach
    void stop() {
        registry.close();
    }

    private static final byte[] PAST_AVROS_LIMIT = {(byte) 0xfe, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f};

    @Test
    void aStringLengthOrItemCountPastAvrosLimitIsNotAvro() {
        ConfluentAvroDeserializer<Rollout> avro = new ConfluentAvroDeserializer<>(null, Rollout.class);
        avro.configure(Map.of("schema.registry.url", registry.url()), false);
        FieldReader<Object> strings = (in, order) -> in.readString();
        assertThatThrownBy(() -> avro.deserializeFields("t", WireFormat.frame(1, PAST_AVROS_LIMIT), strings))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("not-avro"))
                .hasMessageContaining("longer than");
        FieldReader<Object> arrays = (in, order) -> in.readArrayStart();
        assertThatThrownBy(() -> avro.deserializeFields("t", WireFormat.frame(1, PAST_AVROS_LIMIT), arrays))
                .isInstanceOfSatisfying(
                        SerdeException.class, e -> assertThat(e.reason()).isEqualTo("not-avro"))
                .hasMessageContaining("larger than");
    }
}
