package dev.rolloutingest.serde;

/** Decodes Confluent wire-format bytes with a {@link FieldReader} instead of into Avro objects. */
public interface FieldsDeserializer {
    /**
     * Decodes one record's value with {@code reader}. Fails as {@link ConfluentAvroDeserializer#deserialize}
     * does: a {@link SerdeException} whose {@link SerdeException#recordsFault()} tells the record's fault from
     * the registry's.
     */
    <R> R deserializeFields(String topic, byte[] bytes, FieldReader<R> reader);
}
