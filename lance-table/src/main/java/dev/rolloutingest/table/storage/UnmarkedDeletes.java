package dev.rolloutingest.table.storage;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.LongFunction;
import org.lance.Dataset;
import org.lance.Transaction;

/**
 * The generations whose deletes a base version may have applied without its watermarks covering them yet: a round's
 * data commit that marks base rows deleted names its shards' planned generations, and its marks come in a later commit
 * (or, after a crash, in a later round). Rows a round appends lie above the watermarks and show it; rows a delete
 * removed leave no such trace (the deletes are kept beside the base), so each data commit carries, as a transaction
 * property, the generations its own deletes came from plus those of the data commit before it that its base's
 * watermarks do not cover yet. A version whose newest data commit names a generation above the version's watermark
 * holds deletes past its watermarks: a snapshot passes it over.
 */
public final class UnmarkedDeletes {
    /** The property every round's data commit carries (what it merged): tells it from the other commits. */
    public static final String DATA_COMMIT = "rollout.merge.rows";

    /** The property naming the generations (shard=generation, comma-separated) whose deletes are not yet marked. */
    public static final String PROPERTY = "rollout.merge.unmarked.deletes";

    /** How many versions below a version are searched for the data commit it follows. */
    static final int MAX_VERSIONS_BACK = 64;

    private UnmarkedDeletes() {}

    /**
     * The generations whose deletes the newest data commit at or below {@code base}'s version names as not yet marked,
     * less those {@code base}'s watermarks cover; empty when no data commit is found within {@link
     * #MAX_VERSIONS_BACK} versions.
     */
    public static Map<String, Long> at(Dataset base, Map<String, Long> watermarks) {
        return uncovered(named(base, version -> properties(base, version)), watermarks);
    }

    /**
     * What the newest data commit at or below the base's version names: versions read through {@code read} (null:
     * a version GC removed, nothing older is read; empty: a commit without properties).
     */
    private static Map<String, Long> named(Dataset base, LongFunction<Optional<Map<String, String>>> read) {
        for (long v = base.version(); v >= 1 && base.version() - v < MAX_VERSIONS_BACK; v--) {
            Optional<Map<String, String>> properties = read.apply(v);
            if (properties == null) {
                break;
            }
            if (properties.isPresent() && properties.get().containsKey(DATA_COMMIT)) {
                return parse(properties.get().get(PROPERTY));
            }
        }
        return Map.of();
    }

    private static Map<String, Long> uncovered(Map<String, Long> named, Map<String, Long> watermarks) {
        Map<String, Long> uncovered = new TreeMap<>();
        named.forEach((shard, generation) -> {
            if (Long.compareUnsigned(generation, watermarks.getOrDefault(shard, 0L)) > 0) {
                uncovered.put(shard, generation);
            }
        });
        return uncovered;
    }

    /**
     * {@link #at} for one committer, remembering what each version's commit carried (a version never changes), so a
     * commit reads only the versions made since the last (its own it is told of: none). At most {@link
     * #REMEMBERED_VERSIONS} versions; all are forgotten when the base's version goes below the highest one seen (a
     * table made anew at the same place).
     */
    public static final class Remembered {
        private final Map<Long, Optional<Map<String, String>>> byVersion = new LinkedHashMap<>(64, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Optional<Map<String, String>>> eldest) {
                return size() > REMEMBERED_VERSIONS;
            }
        };
        private long highest;

        public synchronized Map<String, Long> at(Dataset base, Map<String, Long> watermarks) {
            if (base.version() < highest) {
                byVersion.clear();
            }
            highest = Math.max(highest, base.version());
            return uncovered(
                    named(base, version -> {
                        Optional<Map<String, String>> known = byVersion.get(version);
                        if (known == null) {
                            known = properties(base, version);
                            if (known != null) {
                                byVersion.put(version, known);
                            }
                        }
                        return known;
                    }),
                    watermarks);
        }

        /** A version this committer made, with the properties its commit carried (none for a marks' commit). */
        public synchronized void made(long version, Map<String, String> properties) {
            byVersion.put(version, properties.isEmpty() ? Optional.empty() : Optional.of(Map.copyOf(properties)));
        }
    }

    /** Versions a {@link Remembered} keeps. */
    static final int REMEMBERED_VERSIONS = 256;

    /** A version's transaction properties (empty: none), or null when the version cannot be read. */
    private static Optional<Map<String, String>> properties(Dataset base, long version) {
        try (Dataset at = base.checkoutVersion(version)) {
            Optional<Transaction> read = at.readTransaction();
            if (read.isEmpty()) {
                return Optional.empty();
            }
            try (Transaction transaction = read.get()) {
                return transaction.transactionProperties().map(HashMap::new);
            }
        } catch (RuntimeException e) {
            return null;
        }
    }

    public static String format(Map<String, Long> generations) {
        StringBuilder out = new StringBuilder();
        new TreeMap<>(generations).forEach((shard, generation) -> {
            if (out.length() > 0) {
                out.append(',');
            }
            out.append(shard).append('=').append(Long.toUnsignedString(generation));
        });
        return out.toString();
    }

    static Map<String, Long> parse(String value) {
        Map<String, Long> generations = new HashMap<>();
        if (value == null || value.isEmpty()) {
            return generations;
        }
        for (String entry : value.split(",")) {
            int at = entry.lastIndexOf('=');
            generations.put(entry.substring(0, at), Long.parseUnsignedLong(entry.substring(at + 1)));
        }
        return generations;
    }
}
