package dev.rolloutingest.table;

import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Shard ids: the lowercase hyphenated name-based UUID of {@code topic/partition}. lance-core rejects
 * anything else with "Invalid shard_id UUID", so ids are validated before any Lance call.
 */
public final class ShardId {
    private static final Pattern UUID_FORM =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    private ShardId() {}

    public static String of(String topic, int partition) {
        return UUID.nameUUIDFromBytes((topic + "/" + partition).getBytes(StandardCharsets.UTF_8))
                .toString();
    }

    public static String requireValid(String shard) {
        if (shard == null || !UUID_FORM.matcher(shard).matches()) {
            throw new IllegalArgumentException("shard id must be a lowercase hyphenated UUID, was '" + shard + "'");
        }
        return shard;
    }

    public static boolean isValid(String shard) {
        return shard != null && UUID_FORM.matcher(shard).matches();
    }
}
