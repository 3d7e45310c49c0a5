package dev.rolloutingest.serde;

import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.IndexedRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/** Serializer and deserializer of one record type, for Kafka Streams. */
public final class ConfluentAvroSerde<T extends IndexedRecord> implements Serde<T> {
    private final ConfluentAvroSerializer<T> serializer;
    private final ConfluentAvroDeserializer<T> deserializer;

    /** @param readerSchema the generated class's schema, or null for generic records. */
    public ConfluentAvroSerde(Schema readerSchema) {
        this.serializer = new ConfluentAvroSerializer<>();
        this.deserializer = new ConfluentAvroDeserializer<>(null, readerSchema);
    }

    public ConfluentAvroSerde(SchemaRegistryClient registry, SerdeConfig config, Schema readerSchema, boolean isKey) {
        this.serializer = new ConfluentAvroSerializer<>(registry, config, isKey);
        this.deserializer = new ConfluentAvroDeserializer<>(registry, readerSchema);
    }

    @Override
    public void configure(Map<String, ?> configs, boolean isKey) {
        serializer.configure(configs, isKey);
        deserializer.configure(configs, isKey);
    }

    @Override
    public Serializer<T> serializer() {
        return serializer;
    }

    @Override
    public Deserializer<T> deserializer() {
        return deserializer;
    }
}
