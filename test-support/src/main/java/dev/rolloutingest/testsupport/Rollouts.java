package dev.rolloutingest.testsupport;

import dev.rolloutingest.schemas.Rollout;
import dev.rolloutingest.schemas.RolloutGenerator;
import dev.rolloutingest.serde.ConfluentAvroSerializer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Producing rollouts to a test's topic, keyed by record_id, in Confluent's wire format through the cluster's
 * registry: record {@code i} is {@code generator.rollout(i % keys, i)}, so its policy_version is {@code i} and the
 * latest version of each key is known.
 */
public final class Rollouts {
    private final TestCluster cluster;
    private final RolloutGenerator generator;

    public Rollouts(TestCluster cluster, RolloutGenerator generator) {
        this.cluster = cluster;
        this.generator = generator;
    }

    /** The producer's settings: idempotent, every acknowledgement awaited. */
    public Map<String, Object> producerSettings() {
        return Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                cluster.bootstrapServers(),
                ProducerConfig.ACKS_CONFIG,
                "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
                true,
                ProducerConfig.LINGER_MS_CONFIG,
                5);
    }

    /** A producer of rollouts to the cluster; the caller closes it. */
    public KafkaProducer<String, Rollout> producer() {
        ConfluentAvroSerializer<Rollout> serializer = new ConfluentAvroSerializer<>();
        serializer.configure(Map.of("schema.registry.url", cluster.registryUrl()), false);
        return new KafkaProducer<>(producerSettings(), new StringSerializer(), serializer);
    }

    /**
     * Records {@code [from, to)}, one acknowledged before the next, pausing {@code pauseEvery50Ms} after every 50th
     * (0 = none); each key's latest version goes into {@code latestVersion} and {@code produced} counts them.
     */
    public void produce(
            String topic,
            int from,
            int to,
            int keys,
            Map<String, Long> latestVersion,
            AtomicLong produced,
            long pauseEvery50Ms) {
        try (KafkaProducer<String, Rollout> producer = producer()) {
            for (int i = from; i < to; i++) {
                Rollout rollout = generator.rollout(i % keys, i);
                producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout))
                        .get();
                synchronized (latestVersion) {
                    latestVersion.put(rollout.getRecordId(), (long) i);
                }
                produced.incrementAndGet();
                if (pauseEvery50Ms > 0 && i % 50 == 0) {
                    Thread.sleep(pauseEvery50Ms);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Records {@code [from, to)} as fast as the broker takes them: all sent, then every acknowledgement awaited. */
    public void produceUnthrottled(
            String topic, int from, int to, int keys, Map<String, Long> latestVersion, AtomicLong produced) {
        List<Future<?>> sends = new ArrayList<>();
        try (KafkaProducer<String, Rollout> producer = producer()) {
            for (int i = from; i < to; i++) {
                Rollout rollout = generator.rollout(i % keys, i);
                sends.add(producer.send(new ProducerRecord<>(topic, rollout.getRecordId(), rollout)));
                synchronized (latestVersion) {
                    latestVersion.put(rollout.getRecordId(), (long) i);
                }
            }
            producer.flush();
            for (Future<?> send : sends) {
                send.get();
                produced.incrementAndGet();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
