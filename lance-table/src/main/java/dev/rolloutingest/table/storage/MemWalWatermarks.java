package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.ShardId;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.lance.Dataset;
import org.lance.Transaction;
import org.lance.index.Index;
import org.lance.memwal.MergedGeneration;
import org.lance.operation.CreateIndex;

/**
 * Each shard's merged watermark in the base table: read, and moved by the marks' commit.
 *
 * <p>lance-core 7.0.0 does not expose it through {@code memWalIndexDetails()}; it sits in the
 * {@code __lance_mem_wal} index's details, a protobuf {@code Any} wrapping MemWalIndexDetails whose
 * field 9 repeats {shard uuid, generation}. One max generation per shard, stored as unsigned 64-bit.
 * This is a minimal protobuf reader and writer for exactly that, so no protobuf runtime is needed.
 *
 * <p>Marks are committed as a {@code CreateIndex} that replaces the MemWAL index with one whose details carry the
 * raised watermarks ({@link #mark}), not as lance-core's merge-insert with {@code markGenerationsAsMerged}: that one
 * plans a join against the base (the record_id index, a scan of the fragments it does not cover) for an empty source,
 * 2-3x the cost of the replacement at 10M rows and more as the table grows. lance refuses a {@code CreateIndex} when
 * another of the same name landed after its read version (a retryable conflict, measured: {@code LancePitfallsTest}),
 * so two committers' marks exclude each other: the refused one reads the newer details and raises them again.
 */
public final class MemWalWatermarks {
    public static final String INDEX_NAME = "__lance_mem_wal";
    private static final int MERGED_GENERATIONS_FIELD = 9;
    private static final int ANY_TYPE_URL_FIELD = 1;
    private static final int ANY_VALUE_FIELD = 2;

    private MemWalWatermarks() {}

    /** Shard id to merged watermark; shards never merged are absent (their watermark is 0). */
    public static Map<String, Long> read(Dataset dataset) {
        Map<String, Long> watermarks = new HashMap<>();
        for (Index index : dataset.getIndexes()) {
            if (!INDEX_NAME.equals(index.name()) || index.indexDetails().isEmpty()) {
                continue;
            }
            addWatermarks(index.indexDetails().get(), watermarks);
        }
        return watermarks;
    }

    /** Adds the watermarks of one MemWAL index's details (the higher one per shard). */
    private static void addWatermarks(byte[] anyDetails, Map<String, Long> watermarks) {
        byte[] details = anyField(anyDetails, ANY_VALUE_FIELD);
        if (details == null) {
            return;
        }
        ByteBuffer message = ByteBuffer.wrap(details);
        while (message.hasRemaining()) {
            long tag = varint(message);
            int field = (int) (tag >>> 3);
            if (field == MERGED_GENERATIONS_FIELD && (tag & 7) == 2) {
                parseMergedGeneration(ByteBuffer.wrap(bytes(message)), watermarks);
            } else {
                skip(message, (int) (tag & 7));
            }
        }
    }

    /** A length-delimited field of a protobuf {@code Any} (its type URL or its value), or null when absent. */
    private static byte[] anyField(byte[] anyDetails, int wanted) {
        ByteBuffer any = ByteBuffer.wrap(anyDetails);
        byte[] found = null;
        while (any.hasRemaining()) {
            long tag = varint(any);
            if ((tag >>> 3) == wanted && (tag & 7) == 2) {
                found = bytes(any);
            } else {
                skip(any, (int) (tag & 7));
            }
        }
        return found;
    }

    private static void parseMergedGeneration(ByteBuffer entry, Map<String, Long> watermarks) {
        String shard = null;
        long generation = 0;
        while (entry.hasRemaining()) {
            long tag = varint(entry);
            int field = (int) (tag >>> 3);
            int wire = (int) (tag & 7);
            if (field == 1 && wire == 2) {
                shard = uuid(bytes(entry));
            } else if (field == 2 && wire == 0) {
                generation = varint(entry);
            } else {
                skip(entry, wire);
            }
        }
        if (shard != null) {
            watermarks.merge(shard, generation, MemWalWatermarks::higher);
        }
    }

    /** The shard id is either the UUID text or a nested message holding it; both are accepted. */
    private static String uuid(byte[] raw) {
        String text = new String(raw, StandardCharsets.UTF_8);
        if (ShardId.isValid(text)) {
            return text;
        }
        ByteBuffer nested = ByteBuffer.wrap(raw);
        try {
            while (nested.hasRemaining()) {
                long tag = varint(nested);
                if ((tag & 7) == 2) {
                    byte[] inner = bytes(nested);
                    if (inner.length == 16) {
                        ByteBuffer b = ByteBuffer.wrap(inner);
                        return new UUID(b.getLong(), b.getLong()).toString();
                    }
                    String innerText = new String(inner, StandardCharsets.UTF_8);
                    if (ShardId.isValid(innerText)) {
                        return innerText;
                    }
                } else {
                    skip(nested, (int) (tag & 7));
                }
            }
        } catch (RuntimeException e) {
            // fall through: not a nested message
        }
        if (raw.length == 16) {
            ByteBuffer b = ByteBuffer.wrap(raw);
            return new UUID(b.getLong(), b.getLong()).toString();
        }
        return text;
    }

    /**
     * Marks generations merged: one commit replacing the MemWAL index by one whose watermarks are the higher of each
     * shard's and the marks' (a watermark never moves back). Refused by a marks' commit that landed first, it reads
     * the newer base and tries again, up to {@code conflictRetries} times. Rebased over a commit that moved the
     * watermarks another way (lance-core's own merge-insert marks, which an older build of this software made), it
     * finds a watermark lower than the version before and commits again from the newer version. Returns the version
     * it made.
     */
    public static long mark(Dataset target, List<MergedGeneration> marks, int conflictRetries) {
        Map<String, Long> wanted = new HashMap<>();
        marks.forEach(m -> wanted.merge(m.shardId(), m.generation(), MemWalWatermarks::higher));
        Dataset base = target;
        int attempt = 0;
        try {
            while (true) {
                Index current = memWalIndex(base);
                byte[] currentDetails = current.indexDetails().orElseThrow();
                Map<String, Long> raised = new HashMap<>();
                addWatermarks(currentDetails, raised);
                wanted.forEach((shard, generation) -> raised.merge(shard, generation, MemWalWatermarks::higher));
                Index replacement = Index.builder()
                        .uuid(UUID.randomUUID())
                        .name(INDEX_NAME)
                        .fields(List.of())
                        // covering no fragment: with no list, lance refuses a compaction committed meanwhile and
                        // plans compactions from the version named here (which a cleanup may have removed)
                        .fragments(List.of())
                        .datasetVersion(base.version())
                        .indexVersion(current.indexVersion())
                        .indexDetails(withWatermarks(currentDetails, raised))
                        .build();
                long made;
                try (Transaction replace = new Transaction.Builder()
                                .readVersion(base.version())
                                .operation(CreateIndex.builder()
                                        .withNewIndices(List.of(replacement))
                                        .withRemovedIndices(List.of(current))
                                        .build())
                                .build();
                        Dataset committed = base.commitTransaction(replace)) {
                    made = committed.version();
                } catch (RuntimeException e) {
                    if (!FencedCommit.isPreempted(e) || attempt++ >= conflictRetries) {
                        throw e;
                    }
                    base = newer(base, target);
                    continue;
                }
                Map<String, Long> lowered = made == base.version() + 1 ? Map.of() : lowered(target, made);
                if (lowered.isEmpty()) {
                    return made;
                }
                if (attempt++ >= conflictRetries) {
                    throw new IllegalStateException("Table " + target.uri() + ": the marks' commit (version " + made
                            + ") was rebased over a commit that moved the watermarks another way, " + attempt
                            + " times in a row");
                }
                // the watermarks the rebased commit lowered are raised again with the marks
                lowered.forEach((shard, generation) -> wanted.merge(shard, generation, MemWalWatermarks::higher));
                base = newer(base, target);
            }
        } finally {
            if (base != target) {
                base.close();
            }
        }
    }

    /** The latest version of the table, the one read before closed unless it is the caller's. */
    private static Dataset newer(Dataset read, Dataset target) {
        Dataset latest = target.checkoutVersion(target.latestVersion());
        if (read != target) {
            read.close();
        }
        return latest;
    }

    /** The watermarks of the version before {@code version} that are higher than at {@code version}. */
    private static Map<String, Long> lowered(Dataset target, long version) {
        try (Dataset before = target.checkoutVersion(version - 1);
                Dataset made = target.checkoutVersion(version)) {
            Map<String, Long> now = read(made);
            Map<String, Long> lowered = new HashMap<>();
            read(before).forEach((shard, generation) -> {
                if (Long.compareUnsigned(now.getOrDefault(shard, 0L), generation) < 0) {
                    lowered.put(shard, generation);
                }
            });
            return lowered;
        }
    }

    private static Index memWalIndex(Dataset base) {
        List<Index> found = base.getIndexes().stream()
                .filter(i -> INDEX_NAME.equals(i.name()) && i.indexDetails().isPresent())
                .toList();
        if (found.size() != 1) {
            throw new IllegalStateException(
                    "Table " + base.uri() + ": expected one " + INDEX_NAME + " index, found " + found.size());
        }
        return found.get(0);
    }

    private static long higher(long a, long b) {
        return Long.compareUnsigned(a, b) >= 0 ? a : b;
    }

    /**
     * The MemWAL index details with field 9 replaced by one entry per shard of {@code watermarks} ({shard as a 16-byte
     * uuid in a nested message, generation}, as lance-core writes it); every other field kept as it was.
     */
    static byte[] withWatermarks(byte[] anyDetails, Map<String, Long> watermarks) {
        byte[] typeUrl = anyField(anyDetails, ANY_TYPE_URL_FIELD);
        byte[] details = anyField(anyDetails, ANY_VALUE_FIELD);
        if (typeUrl == null || details == null) {
            throw new IllegalStateException(INDEX_NAME + " details are not a protobuf Any");
        }
        ByteArrayOutputStream message = new ByteArrayOutputStream();
        ByteBuffer in = ByteBuffer.wrap(details);
        while (in.hasRemaining()) {
            int start = in.position();
            long tag = varint(in);
            skip(in, (int) (tag & 7));
            if ((tag >>> 3) != MERGED_GENERATIONS_FIELD) {
                message.write(details, start, in.position() - start);
            }
        }
        new TreeMap<>(watermarks).forEach((shard, generation) -> {
            UUID id = UUID.fromString(shard);
            ByteBuffer raw =
                    ByteBuffer.allocate(16).putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits());
            ByteArrayOutputStream shardId = new ByteArrayOutputStream();
            writeBytes(shardId, 1, raw.array());
            ByteArrayOutputStream entry = new ByteArrayOutputStream();
            writeBytes(entry, 1, shardId.toByteArray());
            writeVarint(entry, (2 << 3) | 0);
            writeVarint(entry, generation);
            writeBytes(message, MERGED_GENERATIONS_FIELD, entry.toByteArray());
        });
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        writeBytes(out, ANY_TYPE_URL_FIELD, typeUrl);
        writeBytes(out, ANY_VALUE_FIELD, message.toByteArray());
        return out.toByteArray();
    }

    private static void writeBytes(ByteArrayOutputStream out, int field, byte[] value) {
        writeVarint(out, ((long) field << 3) | 2);
        writeVarint(out, value.length);
        out.write(value, 0, value.length);
    }

    private static void writeVarint(ByteArrayOutputStream out, long value) {
        while ((value & ~0x7fL) != 0) {
            out.write((int) ((value & 0x7f) | 0x80));
            value >>>= 7;
        }
        out.write((int) value);
    }

    private static long varint(ByteBuffer in) {
        long value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte b = in.get();
            value |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new IllegalStateException("malformed varint in " + INDEX_NAME + " details");
    }

    private static byte[] bytes(ByteBuffer in) {
        int length = (int) varint(in);
        byte[] out = new byte[length];
        in.get(out);
        return out;
    }

    private static void skip(ByteBuffer in, int wireType) {
        switch (wireType) {
            case 0 -> varint(in);
            case 1 -> in.position(in.position() + 8);
            case 2 -> {
                int length = (int) varint(in); // read before position(): it moves the buffer
                in.position(in.position() + length);
            }
            case 5 -> in.position(in.position() + 4);
            default -> throw new IllegalStateException(
                    "unsupported protobuf wire type " + wireType + " in " + INDEX_NAME);
        }
    }
}
