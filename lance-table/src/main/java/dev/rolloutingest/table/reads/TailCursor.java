package dev.rolloutingest.table.reads;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where a reader of the table stands: per partition of the input topic, the highest offset whose row (if it is still
 * the newest of its key) it has been handed. A scan answers the cursor of what it read; a tail answers the rows after a
 * cursor and the next cursor. Opaque to clients: URL-safe base64 of a small JSON object that names the table (a hash of
 * its URI) and the topic, so a cursor of another table or topic is refused rather than misread.
 *
 * @param table the hash of the table's URI ({@link #tableId})
 * @param offsets partition to the last offset handed over; a partition absent has had nothing handed over
 */
public record TailCursor(String table, String topic, Map<Integer, Long> offsets) {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int VERSION = 1;

    /** Cursors longer than this are refused before they are decoded (a topic has at most 10,000 partitions). */
    public static final int MAX_ENCODED_CHARS = 512 * 1024;

    public TailCursor {
        offsets = Collections.unmodifiableMap(new TreeMap<>(offsets));
    }

    /** The cursor before the first row of the table: a tail from it hands over every key's newest row. */
    public static TailCursor start(String tableUri, String topic) {
        return new TailCursor(tableId(tableUri), topic, Map.of());
    }

    /** The last offset handed over of a partition; -1 when none was. */
    public long offset(int partition) {
        return offsets.getOrDefault(partition, -1L);
    }

    /** A short stable name of the table at {@code uri}: the first 16 hex digits of its SHA-256. */
    public static String tableId(String uri) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(uri.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The cursor as clients carry it. */
    public String encode() {
        ObjectNode json = JSON.createObjectNode();
        json.put("v", VERSION);
        json.put("table", table);
        json.put("topic", topic);
        ObjectNode partitions = json.putObject("offsets");
        offsets.forEach((partition, offset) -> partitions.put(Integer.toString(partition), offset));
        try {
            return Base64.getUrlEncoder().withoutPadding().encodeToString(JSON.writeValueAsBytes(json));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A cursor a client sent; anything that is not one fails with the reason (a bad request). */
    public static TailCursor decode(String encoded) {
        if (encoded == null || encoded.isBlank()) {
            throw new IllegalArgumentException("cursor is empty");
        }
        if (encoded.length() > MAX_ENCODED_CHARS) {
            throw new IllegalArgumentException("cursor is longer than " + MAX_ENCODED_CHARS + " characters");
        }
        JsonNode json;
        try {
            json = JSON.readTree(Base64.getUrlDecoder().decode(encoded.trim()));
        } catch (IllegalArgumentException | IOException e) {
            throw new IllegalArgumentException("cursor is not one this server handed out (not base64 JSON)");
        }
        if (json == null || !json.isObject() || json.path("v").asInt() != VERSION) {
            throw new IllegalArgumentException("cursor is not one this server handed out (unknown version)");
        }
        String table = json.path("table").asText(null);
        String topic = json.path("topic").asText(null);
        JsonNode partitions = json.path("offsets");
        if (table == null || topic == null || !partitions.isObject()) {
            throw new IllegalArgumentException("cursor lacks its table, topic or offsets");
        }
        Map<Integer, Long> offsets = new TreeMap<>();
        Iterator<Map.Entry<String, JsonNode>> fields = partitions.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> entry = fields.next();
            int partition;
            try {
                partition = Integer.parseInt(entry.getKey());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("cursor names a partition that is not a number: " + entry.getKey());
            }
            if (partition < 0
                    || !entry.getValue().canConvertToLong()
                    || entry.getValue().asLong() < -1) {
                throw new IllegalArgumentException("cursor has a bad offset for partition " + entry.getKey());
            }
            offsets.put(partition, entry.getValue().asLong());
        }
        return new TailCursor(table, topic, offsets);
    }

    /** Fails (a bad request) when this cursor is not of the table at {@code tableUri} and {@code topic}. */
    public TailCursor requireOf(String tableUri, String expectedTopic) {
        if (!table.equals(tableId(tableUri))) {
            throw new IllegalArgumentException("cursor belongs to another table (" + table + ", this one is "
                    + tableId(tableUri) + "): start with a scan of this table");
        }
        if (!topic.equals(expectedTopic)) {
            throw new IllegalArgumentException(
                    "cursor is of topic '" + topic + "', this table is read for topic '" + expectedTopic + "'");
        }
        return this;
    }
}
