package dev.rolloutingest.serde;

import java.util.Map;
import org.apache.avro.generic.IndexedRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/** Serializer and deserializer of one record type, for Kafka Streams. */
public final class ConfluentAvroSerde<T extends IndexedRecord> implements Serde<T> {
    private final ConfluentAvroSerializer<T> serializer;
    private final ConfluentAvroDeserializer<T> deserializer;

    /** @param type the generated class, or null for generic records. */
    public ConfluentAvroSerde(Class<T> type) {
        this.serializer = new ConfluentAvroSerializer<>();
        this.deserializer = new ConfluentAvroDeserializer<>(null, type);
    }

    public ConfluentAvroSerde(SchemaRegistryClient registry, SerdeConfig config, Class<T> type, boolean isKey) {
        this.serializer = new ConfluentAvroSerializer<>(registry, config, isKey);
        this.deserializer = new ConfluentAvroDeserializer<>(registry, type);
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
