/**
 * A Rollout value in the formats producers send besides Avro: plain JSON, Confluent's JSON Schema and Protobuf
 * framings, and which of them a topic's values are read as ({@link dev.rolloutingest.serde.values.ValueFormats}).
 * Each decoder maps its input to the contract by field name and writes the row as the Avro binary encoding of the
 * contract ({@link dev.rolloutingest.serde.values.AvroTape}), so the one row path of the Avro values (a
 * {@link dev.rolloutingest.serde.FieldReader} staging the row into the batch) and its schema evolution take every
 * format. Uses the {@code serde} package (the registry client, the wire format, the Protobuf schemas, the errors);
 * nothing uses this package but the ingest app, through {@link dev.rolloutingest.serde.values.ValueDeserializer}.
 */
package dev.rolloutingest.serde.values;
