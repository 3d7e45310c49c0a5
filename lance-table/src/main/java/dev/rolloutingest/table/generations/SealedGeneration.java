package dev.rolloutingest.table.generations;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.rolloutingest.table.ShardId;
import dev.rolloutingest.table.rows.KeyFilter;
import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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
 * @param deadLettered records of the range left out because the table refused them at write time; they go
 *     to the DLQ in the same transaction as the generation's event, and again if the generation is adopted
 * @param keyFilter a Bloom filter of the generation's record_ids; null for seals written before filters
 *     existed (such a generation is opened by every lookup)
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
        Instant sealedAt,
        List<DeadLettered> deadLettered,
        KeyFilter keyFilter) {

    /** A record of the range that the write refused: its offset, a short reason and the error. */
    public record DeadLettered(long offset, String reason, String error) {}

    public static final String MEM_WAL_DIR = "_mem_wal";
    public static final String SEALS_DIR = "_seals";
    private static final Pattern FOLDER = Pattern.compile("g(\\d{20})-o(\\d+)-(\\d+)");
    private static final ObjectMapper JSON = new ObjectMapper();

    public SealedGeneration {
        ShardId.requireValid(shard);
        deadLettered = deadLettered == null ? List.of() : List.copyOf(deadLettered);
        if (firstOffset < 0 || lastOffset < firstOffset) {
            throw new IllegalArgumentException("offset range [" + firstOffset + ", " + lastOffset + "] is invalid");
        }
        if (generation != lastOffset + 1 || generation <= 0) {
            // Generation numbers outside [0, 2^63-1] break lance's merged watermark for good.
            throw new IllegalArgumentException("generation must be last offset + 1 and positive, was " + generation
                    + " for last offset " + lastOffset);
        }
    }

    public SealedGeneration(
            String shard,
            long generation,
            String topic,
            int partition,
            long firstOffset,
            long lastOffset,
            long rows,
            long bytes,
            Instant sealedAt) {
        this(shard, generation, topic, partition, firstOffset, lastOffset, rows, bytes, sealedAt, List.of(), null);
    }

    public static SealedGeneration of(
            String topic, int partition, long firstOffset, long lastOffset, long rows, long bytes, Instant sealedAt) {
        return of(topic, partition, firstOffset, lastOffset, rows, bytes, sealedAt, List.of(), null);
    }

    public static SealedGeneration of(
            String topic,
            int partition,
            long firstOffset,
            long lastOffset,
            long rows,
            long bytes,
            Instant sealedAt,
            List<DeadLettered> deadLettered,
            KeyFilter keyFilter) {
        return new SealedGeneration(
                ShardId.of(topic, partition),
                Math.addExact(lastOffset, 1),
                topic,
                partition,
                firstOffset,
                lastOffset,
                rows,
                bytes,
                sealedAt,
                deadLettered,
                keyFilter);
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
                return new FolderName(
                        Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3)));
            } catch (NumberFormatException e) {
                return null;
            }
        }
    }

    public byte[] toJson() {
        try {
            ObjectNode node = JSON.createObjectNode()
                    .put("shard", shard)
                    .put("generation", generation)
                    .put("folder", folder())
                    .put("topic", topic)
                    .put("partition", partition)
                    .put("first_offset", firstOffset)
                    .put("last_offset", lastOffset)
                    .put("rows", rows)
                    .put("bytes", bytes)
                    .put("sealed_at", sealedAt.toString());
            if (keyFilter != null) {
                node.put("key_filter", keyFilter.encode());
            }
            if (!deadLettered.isEmpty()) {
                ArrayNode list = node.putArray("dead_lettered");
                deadLettered.forEach(d -> list.addObject()
                        .put("offset", d.offset())
                        .put("reason", d.reason())
                        .put("error", d.error()));
            }
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(node);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    public static SealedGeneration fromJson(byte[] json) throws IOException {
        var node = JSON.readTree(json);
        List<DeadLettered> deadLettered = new ArrayList<>();
        node.path("dead_lettered")
                .forEach(d -> deadLettered.add(new DeadLettered(
                        d.path("offset").asLong(),
                        d.path("reason").asText(),
                        d.path("error").asText())));
        return new SealedGeneration(
                node.path("shard").asText(),
                node.path("generation").asLong(),
                node.path("topic").asText(),
                node.path("partition").asInt(),
                node.path("first_offset").asLong(),
                node.path("last_offset").asLong(),
                node.path("rows").asLong(),
                node.path("bytes").asLong(),
                Instant.parse(node.path("sealed_at").asText()),
                deadLettered,
                node.hasNonNull("key_filter")
                        ? KeyFilter.decode(node.get("key_filter").asText())
                        : null);
    }
}
