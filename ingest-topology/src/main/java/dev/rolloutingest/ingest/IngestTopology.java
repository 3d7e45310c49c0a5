package dev.rolloutingest.ingest;

import dev.rolloutingest.schemas.GenerationSealed;
import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.serde.ConfluentAvroDeserializer;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import dev.rolloutingest.serde.FieldsDeserializer;
import dev.rolloutingest.serde.SchemaRegistryClient;
import dev.rolloutingest.serde.SerdeConfig;
import dev.rolloutingest.serde.values.ValueDeserializer;
import dev.rolloutingest.table.catalog.TableCatalog;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import java.util.function.ObjLongConsumer;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.state.Stores;

/**
 * The ingest topology, built by a function the app and the tests share:
 * <pre>
 * input topics (bytes) -> batcher [progress store] -> rollout-generations (GenerationSealed)
 *                                             -> rollouts-dlq (original bytes + reason headers)
 * </pre>
 * Input stays bytes so that a dead letter carries the producer's exact bytes.
 */
final class IngestTopology {
    static final String SOURCE = "rollouts-source";
    static final String BATCHER = "batcher";
    static final String GENERATIONS_SINK = "generations-sink";
    static final String DLQ_SINK = "dlq-sink";
    public static final String PROGRESS_STORE = "ingest-progress";

    private IngestTopology() {}

    /** The production wiring: registry-backed serdes, a real consumer for re-reading after restarts. */
    public static Topology build(
            IngestConfig config,
            TableCatalog tables,
            IngestMetrics metrics,
            InflightBudget budget,
            IngestHealth health,
            SealWriters writers,
            IngestFaults faults,
            ObjLongConsumer<TopicPartition> sealedPositions) {
        FieldsDeserializer rollouts = values(config, metrics);
        ConfluentAvroSerializer<GenerationSealed> events = new ConfluentAvroSerializer<>();
        events.configure(config.serdeConfig(), false);
        return build(
                config,
                tables,
                metrics,
                budget,
                rollouts,
                events,
                tp -> recoveryReader(config),
                health,
                faults,
                writers,
                sealedPositions);
    }

    /**
     * How the app reads a record's value: in the format its topic's setting names (rollout.value.format, .formats),
     * added fields kept or dropped as rollout.schema.evolution says.
     */
    static FieldsDeserializer values(IngestConfig config, IngestMetrics metrics) {
        ConfluentAvroDeserializer<Rollout> avro = new ConfluentAvroDeserializer<>(null, Rollout.class)
                .onUnknownFields(metrics::droppedFields)
                .keepingAddedFields(config.schemaEvolution())
                .onAddedFields(metrics::addedFields);
        avro.configure(config.serdeConfig(), false);
        SerdeConfig serde = SerdeConfig.from(config.serdeConfig());
        return new ValueDeserializer(
                config.valueFormats(),
                avro,
                new SchemaRegistryClient(serde),
                config.schemaEvolution(),
                metrics::addedFields,
                metrics::droppedFields,
                metrics::protobufUnknownFields,
                serde.cacheCapacity());
    }

    static Topology build(
            IngestConfig config,
            TableCatalog tables,
            IngestMetrics metrics,
            InflightBudget budget,
            FieldsDeserializer rollouts,
            Serializer<GenerationSealed> events,
            Function<TopicPartition, Consumer<byte[], byte[]>> recoveryReader,
            IngestHealth health,
            IngestFaults faults,
            SealWriters writers,
            ObjLongConsumer<TopicPartition> sealedPositions) {
        RecordCheck check = RecordCheck.of(config, rollouts, metrics);
        InputRereader rereader = new InputRereader(recoveryReader, metrics, Duration.ofMinutes(2));
        InputSettings input = config.input();
        for (String name : input.declaredTables()) {
            tables.createOrOpen(name);
        }
        Topology topology = new Topology();
        if (input.inputPattern() != null) {
            topology.addSource(
                    Topology.AutoOffsetReset.EARLIEST,
                    SOURCE,
                    new ByteArrayDeserializer(),
                    new ByteArrayDeserializer(),
                    input.inputPattern());
        } else {
            topology.addSource(
                    Topology.AutoOffsetReset.EARLIEST,
                    SOURCE,
                    new ByteArrayDeserializer(),
                    new ByteArrayDeserializer(),
                    input.inputTopics().toArray(String[]::new));
        }
        TaskBatchers.Factory batchers = (context, partition, keys) -> new PartitionBatcher(
                context,
                partition,
                keys,
                config,
                tables,
                check,
                metrics,
                budget,
                rereader,
                health,
                faults,
                writers,
                sealedPositions);
        topology.addProcessor(
                BATCHER,
                () -> new TaskBatchers(
                        input.oneInputTopic() ? input.inputTopic() : null, config.sealCheckIntervalMs(), batchers),
                SOURCE);
        // Written once per seal (no cache: nothing is put per record).
        topology.addStateStore(
                Stores.keyValueStoreBuilder(
                        Stores.persistentKeyValueStore(PROGRESS_STORE), Serdes.String(), Serdes.Long()),
                BATCHER);
        topology.addSink(GENERATIONS_SINK, config.generationsTopic(), new StringSerializer(), events, BATCHER);
        topology.addSink(DLQ_SINK, config.dlqTopic(), new ByteArraySerializer(), new ByteArraySerializer(), BATCHER);
        return topology;
    }

    /**
     * read_committed: only records the producer committed, exactly what Streams delivered before. In the application's
     * group without joining it (assigned partitions, no commits), so it can read the offsets Streams committed.
     */
    static Consumer<byte[], byte[]> recoveryReader(IngestConfig config) {
        Map<String, Object> props = new HashMap<>(config.clientConfig());
        props.put(ConsumerConfig.GROUP_ID_CONFIG, config.applicationId());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // Never jump silently: an offset retention removed must surface as an error, not as a skip.
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 500);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "rollout-ingest-recovery");
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
}
