package dev.rolloutingest.table;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A sealed generation: an immutable dataset at {@code _mem_wal/<shard>/<folder>} plus its seal file
 * {@code _seals/<shard>/<folder>.json}, written after the dataset and holding its provenance. The seal
 * file is the commit point: a generation without one is incomplete and is never read or merged.
 *
 * @param generation last offset of the batch + 1 (monotonic per shard, within [1, 2^63-1])
 * @param rows rows after de-duplication by record_id
 * @param bytes payload + key bytes of the input records, for the merge byte budget
 */
public record SealedGeneration(
        String shard,
        long generation,
        String topic,
        int partition,
        long firstOffset,
        long lastOffset,
        long rows,
        long bytes,
        Instant sealedAt) {

    public static final String MEM_WAL_DIR = "_mem_wal";
    public static final String SEALS_DIR = "_seals";
    private static final Pattern FOLDER = Pattern.compile("g(\\d{20})-o(\\d+)-(\\d+)");
    private static final ObjectMapper JSON = new ObjectMapper();

    public SealedGeneration {
        ShardId.requireValid(shard);
        if (firstOffset < 0 || lastOffset < firstOffset) {
            throw new IllegalArgumentException("offset range [" + firstOffset + ", " + lastOffset + "] is invalid");
        }
        if (generation != lastOffset + 1 || generation <= 0) {
            // Generation numbers outside [0, 2^63-1] break lance's merged watermark for good.
            throw new IllegalArgumentException("generation must be last offset + 1 and positive, was " + generation
                    + " for last offset " + lastOffset);
        }
    }

    public static SealedGeneration of(String topic, int partition, long firstOffset, long lastOffset, long rows, long bytes,
            Instant sealedAt) {
        return new SealedGeneration(ShardId.of(topic, partition), Math.addExact(lastOffset, 1), topic, partition,
                firstOffset, lastOffset, rows, bytes, sealedAt);
    }

    /** The folder name: the generation, zero-padded so names sort like numbers, and the offset range. */
    public String folder() {
        return folderName(generation, firstOffset, lastOffset);
    }

    public static String folderName(long generation, long firstOffset, long lastOffset) {
        return String.format("g%020d-o%d-%d", generation, firstOffset, lastOffset);
    }

    /** Path of the dataset relative to the table root. */
    public String datasetPath() {
        return MEM_WAL_DIR + "/" + shard + "/" + folder();
    }

    public String sealPath() {
        return SEALS_DIR + "/" + shard + "/" + folder() + ".json";
    }

    /** Parsed folder name: generation, first and last offset; null when the name is not ours. */
    public record FolderName(long generation, long firstOffset, long lastOffset) {
        public static FolderName parse(String name) {
            Matcher m = FOLDER.matcher(name);
            if (!m.matches()) {
                return null;
            }
            try {
                return new FolderName(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)));
            } catch (NumberFormatException e) {
                return null;
            }
        }
    }

    public byte[] toJson() {
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(JSON.createObjectNode()
                    .put("shard", shard).put("generation", generation).put("folder", folder())
                    .put("topic", topic).put("partition", partition)
                    .put("first_offset", firstOffset).put("last_offset", lastOffset)
                    .put("rows", rows).put("bytes", bytes).put("sealed_at", sealedAt.toString()));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    public static SealedGeneration fromJson(byte[] json) throws IOException {
        var node = JSON.readTree(json);
        return new SealedGeneration(node.path("shard").asText(), node.path("generation").asLong(),
                node.path("topic").asText(), node.path("partition").asInt(), node.path("first_offset").asLong(),
                node.path("last_offset").asLong(), node.path("rows").asLong(), node.path("bytes").asLong(),
                Instant.parse(node.path("sealed_at").asText()));
    }
}
