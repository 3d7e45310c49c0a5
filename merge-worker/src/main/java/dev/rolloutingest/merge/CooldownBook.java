package dev.rolloutingest.merge;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cooldowns of one events task, in its changelogged store: failures of a shard's merges or of a maintenance
 * kind counted in a row, a cooldown with exponential backoff past the policy's count, which automatic runs respect
 * (manual merges never do), cleared by a success, expired records dropped.
 */
final class CooldownBook {
    // the scheduler's logger: these lines read in order with its own, under the name operators filter on
    private static final Logger log = LoggerFactory.getLogger(MergeScheduler.class);

    private final KeyValueStore<String, Cooldown> store;
    private final CooldownPolicy policy;
    private final MergeMetrics metrics;

    CooldownBook(KeyValueStore<String, Cooldown> store, CooldownPolicy policy, MergeMetrics metrics) {
        this.store = store;
        this.policy = policy;
        this.metrics = metrics;
    }

    /** Whether automatic runs of {@code kind} on {@code target} are held back now. */
    boolean gates(String kind, String target, long now) {
        return policy.gates(store.get(Cooldown.key(kind, target)), now);
    }

    /** A success: the target's failures are forgotten. */
    void clear(String kind, String target) {
        store.delete(Cooldown.key(kind, target));
    }

    /**
     * A failed run of {@code kind} on {@code target}: counted, and a cooldown once they are too many in a row. The logs
     * name it by {@code subject}: the table's URI and, for a merge, its shard (the target is only a store key).
     */
    void recordFailure(String kind, String target, String subject, Throwable error, long now) {
        Cooldown previous = store.get(Cooldown.key(kind, target));
        Cooldown next = policy.onFailure(previous, kind, target, String.valueOf(error.getMessage()), now);
        store.put(next.key(), next);
        if (next.activeAt(now)) {
            metrics.cooldown();
            log.warn(
                    "{} of {} failed {} times in a row; automatic runs skip it until {} (cooldown {} s). Last error: {}",
                    kind,
                    subject,
                    next.failures(),
                    Instant.ofEpochMilli(next.untilMs()),
                    (next.untilMs() - now) / 1000,
                    next.lastError());
        } else {
            log.info(
                    "{} of {} failed ({} of {} before a cooldown): {}",
                    kind,
                    subject,
                    next.failures(),
                    policy.afterFailures(),
                    next.lastError());
        }
    }

    /** Drops the records whose cooldown is over and whose last failure is old enough. */
    void expire(long now) {
        List<String> expired = new ArrayList<>();
        try (KeyValueIterator<String, Cooldown> all = store.all()) {
            while (all.hasNext()) {
                KeyValue<String, Cooldown> kv = all.next();
                if (policy.expired(kv.value, now)) {
                    expired.add(kv.key);
                }
            }
        }
        expired.forEach(store::delete);
    }
}
