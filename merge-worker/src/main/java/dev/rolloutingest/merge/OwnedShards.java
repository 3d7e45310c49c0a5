package dev.rolloutingest.merge;

import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/** The shards an events task owns, by their store keys ({@link MergeTables#key}), in its changelogged store. */
final class OwnedShards {
    private final KeyValueStore<String, OwnedShard> store;

    OwnedShards(KeyValueStore<String, OwnedShard> store) {
        this.store = store;
    }

    /** The shard's record; a fresh one for a shard the task does not own yet. */
    OwnedShard get(String key) {
        OwnedShard owned = store.get(key);
        return owned == null ? OwnedShard.none() : owned;
    }

    /** Takes the shard on, unless the task owns it already. */
    void own(String key) {
        if (store.get(key) == null) {
            store.put(key, OwnedShard.none());
        }
    }

    /** Stores the shard's record: only what is put reaches the changelog. */
    void put(String key, OwnedShard owned) {
        store.put(key, owned);
    }

    /** Every owned key, in the store's order. */
    void forEachKey(Consumer<String> key) {
        try (KeyValueIterator<String, OwnedShard> all = store.all()) {
            all.forEachRemaining(kv -> key.accept(kv.key));
        }
    }

    /** The keys of the shards this task owns. */
    Set<String> keys() {
        Set<String> keys = new TreeSet<>();
        forEachKey(keys::add);
        return keys;
    }
}
