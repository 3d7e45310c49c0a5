package dev.rolloutingest.table.storage;

import dev.rolloutingest.table.ShardId;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.lance.Dataset;
import org.lance.index.Index;

/**
 * Reads each shard's merged watermark from the base table.
 *
 * <p>lance-core 7.0.0 does not expose it through {@code memWalIndexDetails()}; it sits in the
 * {@code __lance_mem_wal} index's details, a protobuf {@code Any} wrapping MemWalIndexDetails whose
 * field 9 repeats {shard uuid, generation}. One max generation per shard, stored as unsigned 64-bit.
 * This is a minimal protobuf reader for exactly that, so no protobuf runtime is needed.
 */
public final class MemWalWatermarks {
    public static final String INDEX_NAME = "__lance_mem_wal";
    private static final int MERGED_GENERATIONS_FIELD = 9;

    private MemWalWatermarks() {}

    /** Shard id to merged watermark; shards never merged are absent (their watermark is 0). */
    public static Map<String, Long> read(Dataset dataset) {
        Map<String, Long> watermarks = new HashMap<>();
        for (Index index : dataset.getIndexes()) {
            if (!INDEX_NAME.equals(index.name()) || index.indexDetails().isEmpty()) {
                continue;
            }
            ByteBuffer any = ByteBuffer.wrap(index.indexDetails().get());
            byte[] details = null;
            while (any.hasRemaining()) {
                long tag = varint(any);
                int field = (int) (tag >>> 3);
                if (field == 2 && (tag & 7) == 2) {
                    details = bytes(any);
                } else {
                    skip(any, (int) (tag & 7));
                }
            }
            if (details == null) {
                continue;
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
        return watermarks;
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
            watermarks.merge(shard, generation, (a, b) -> Long.compareUnsigned(a, b) >= 0 ? a : b);
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
