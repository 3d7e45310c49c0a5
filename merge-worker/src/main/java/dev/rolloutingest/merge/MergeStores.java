package dev.rolloutingest.merge;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The merge-worker's state: the shards a task owns, each an {@link OwnedShard}, and per (kind, target) its {@link
 * Cooldown}.
 * Both are changelogged and typed; caching sends a key to the changelog once per commit however often it
 * changed.
 */
final class MergeStores {
    /** The shards a task owns (named as the backlog store of older versions: the same changelog). */
    static final String SHARD_STORE = "merge-backlog";

    static final String COOLDOWN_STORE = "merge-cooldowns";

    private MergeStores() {}

    static void addTo(Topology topology, String processor) {
        topology.addStateStore(builder(SHARD_STORE, OwnedShard.class), processor);
        topology.addStateStore(builder(COOLDOWN_STORE, Cooldown.class), processor);
    }

    private static <V> StoreBuilder<KeyValueStore<String, V>> builder(String name, Class<V> type) {
        return Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(name), Serdes.String(), new JsonSerde<>(type))
                .withCachingEnabled();
    }

    static KeyValueStore<String, OwnedShard> shards(ProcessorContext<?, ?> context) {
        return context.getStateStore(SHARD_STORE);
    }

    static KeyValueStore<String, Cooldown> cooldowns(ProcessorContext<?, ?> context) {
        return context.getStateStore(COOLDOWN_STORE);
    }
}
