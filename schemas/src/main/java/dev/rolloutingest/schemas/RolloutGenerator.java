package dev.rolloutingest.schemas;

import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Deterministic synthetic rollouts: the same seed and index always give the same record. Used by the
 * {@code produce} command, the embedded demo and tests.
 */
public final class RolloutGenerator {
    private final String experiment;
    private final int payloadBytes;
    private final long seed;

    public RolloutGenerator(String experiment, int payloadBytes, long seed) {
        if (payloadBytes < 0) {
            throw new IllegalArgumentException("payloadBytes must be >= 0, was " + payloadBytes);
        }
        this.experiment = experiment;
        this.payloadBytes = payloadBytes;
        this.seed = seed;
    }

    public static String recordId(String experiment, long index) {
        return experiment + "-" + index;
    }

    /** The index-th rollout; {@code version} distinguishes rewrites of the same record_id. */
    public Rollout rollout(long index, int version) {
        SplittableRandom random = new SplittableRandom(seed ^ (index * 0x9E3779B97F4A7C15L) ^ version);
        int tokens = 4 + random.nextInt(12);
        List<Integer> input = new ArrayList<>(tokens);
        List<Integer> output = new ArrayList<>(tokens);
        List<Float> logprobs = new ArrayList<>(tokens);
        for (int i = 0; i < tokens; i++) {
            input.add(random.nextInt(50_000));
            output.add(random.nextInt(50_000));
            logprobs.add((float) -random.nextDouble(5.0));
        }
        byte[] payload = null;
        if (payloadBytes > 0) {
            payload = new byte[payloadBytes];
            for (int i = 0; i < payload.length; i += 8) {
                long value = random.nextLong();
                for (int b = 0; b < 8 && i + b < payload.length; b++) {
                    payload[i + b] = (byte) (value >>> (8 * b));
                }
            }
        }
        return Rollout.newBuilder()
                .setRecordId(recordId(experiment, index))
                .setExperiment(experiment)
                .setRolloutId(experiment + "-rollout-" + (index / 4))
                .setProblemId("problem-" + (index % 97))
                .setSequenceOrder((int) (index % 4))
                .setRole(index % 2 == 0 ? "assistant" : "user")
                .setCreatedAt(Instant.ofEpochSecond(1_760_000_000L + index, version * 1000L))
                .setContent("step " + index + " version " + version)
                .setInputTokens(input)
                .setOutputTokens(output)
                .setOutputLogprobs(logprobs)
                .setReward((float) random.nextDouble())
                .setAdvantage(null)
                .setPolicyVersion((long) version)
                .setIncludeInTraining(true)
                .setMetadata(Map.of("version", Integer.toString(version)))
                .setBinaryPayload(payload == null ? null : ByteBuffer.wrap(payload))
                .build();
    }
}
