package dev.rolloutingest.testsupport;

import dev.rolloutingest.embedded.ApicurioRegistry;
import dev.rolloutingest.embedded.EmbeddedKafka;
import dev.rolloutingest.embedded.EmbeddedS3;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * The real services of an integration test: a KRaft broker, an Apicurio registry (Confluent API) and, when asked, an
 * S3 API server, started under one folder and stopped together. One per test class is the usual use (the registry
 * takes seconds to start); each test makes topics of its own.
 */
public final class TestCluster implements AutoCloseable {
    /** How long Apicurio may take to start on a loaded machine. */
    public static final Duration REGISTRY_START = Duration.ofSeconds(120);

    private final EmbeddedKafka kafka;
    private final ApicurioRegistry registry;
    private final EmbeddedS3 s3;
    /** False for the JVM's {@link SharedRegistry}, which outlives the cluster. */
    private final boolean ownsRegistry;

    private TestCluster(EmbeddedKafka kafka, ApicurioRegistry registry, EmbeddedS3 s3, boolean ownsRegistry) {
        this.kafka = kafka;
        this.registry = registry;
        this.s3 = s3;
        this.ownsRegistry = ownsRegistry;
    }

    /** A broker and a registry under {@code root}. */
    public static TestCluster start(Path root) {
        return start(root, null);
    }

    /** A broker, a registry and, unless {@code bucket} is null, an S3 API server holding that bucket. */
    public static TestCluster start(Path root, String bucket) {
        EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka-" + UUID.randomUUID()));
        ApicurioRegistry registry = null;
        try {
            registry = ApicurioRegistry.start(root.resolve("registry"), REGISTRY_START);
            EmbeddedS3 s3 = bucket == null ? null : EmbeddedS3.start(root.resolve("s3"), bucket);
            return new TestCluster(kafka, registry, s3, true);
        } catch (RuntimeException e) {
            if (registry != null) {
                registry.close();
            }
            kafka.close();
            throw e;
        }
    }

    /**
     * A broker under {@code root} and the JVM's {@link SharedRegistry}: for a class whose subjects are its own (topics
     * named per run) and that leaves the registry's rules and process alone.
     */
    public static TestCluster startSharingRegistry(Path root) {
        EmbeddedKafka kafka = EmbeddedKafka.start(root.resolve("kafka-" + UUID.randomUUID()));
        try {
            return new TestCluster(kafka, SharedRegistry.get(), null, false);
        } catch (RuntimeException e) {
            kafka.close();
            throw e;
        }
    }

    public EmbeddedKafka kafka() {
        return kafka;
    }

    public ApicurioRegistry registry() {
        return registry;
    }

    /** The S3 API server; fails when this cluster was started without one. */
    public EmbeddedS3 s3() {
        if (s3 == null) {
            throw new IllegalStateException("this cluster was started without an S3 API server");
        }
        return s3;
    }

    public String bootstrapServers() {
        return kafka.bootstrapServers();
    }

    /** The registry's Confluent-compatible base URL. */
    public String registryUrl() {
        return registry.confluentUrl();
    }

    /** Topics by name and partition count, replication 1. */
    public void createTopics(Map<String, Integer> partitionsByTopic) {
        List<NewTopic> topics = new ArrayList<>();
        partitionsByTopic.forEach((name, partitions) -> topics.add(new NewTopic(name, partitions, (short) 1)));
        kafka.createTopics(topics);
    }

    /**
     * The apps' default topics: {@code rollouts} with {@code inputPartitions} partitions, {@code rollout-generations},
     * {@code rollout-merges} and {@code rollouts-dlq} with one each.
     */
    public void createDefaultTopics(int inputPartitions) {
        Map<String, Integer> topics = new LinkedHashMap<>();
        topics.put("rollouts", inputPartitions);
        topics.put("rollout-generations", 1);
        topics.put("rollout-merges", 1);
        topics.put("rollouts-dlq", 1);
        createTopics(topics);
    }

    /**
     * A test run's own topics: {@code input} with its partitions and, with one partition each, {@code
     * <run>-generations}, {@code <run>-merges} and {@code <run>-dlq} (the names {@link AppSettings#topicsOf} gives).
     */
    public void createRunTopics(String run, String input, int partitions) {
        Map<String, Integer> topics = new LinkedHashMap<>();
        topics.put(input, partitions);
        topics.put(run + "-generations", 1);
        topics.put(run + "-merges", 1);
        topics.put(run + "-dlq", 1);
        createTopics(topics);
    }

    @Override
    public void close() {
        try {
            if (s3 != null) {
                s3.close();
            }
        } finally {
            try {
                if (ownsRegistry) {
                    registry.close();
                }
            } finally {
                kafka.close();
            }
        }
    }
}
