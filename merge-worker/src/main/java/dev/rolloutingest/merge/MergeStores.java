package dev.rolloutingest.merge;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The merge-worker's state: per shard its {@link ShardBacklog}, per (kind, target) its {@link Cooldown}.
 * Both are changelogged and typed; caching sends a key to the changelog once per commit however often it
 * changed.
 */
final class MergeStores {
    static final String BACKLOG_STORE = "merge-backlog";
    static final String COOLDOWN_STORE = "merge-cooldowns";

    private MergeStores() {}

    static void addTo(Topology topology, String processor) {
        topology.addStateStore(builder(BACKLOG_STORE, ShardBacklog.class), processor);
        topology.addStateStore(builder(COOLDOWN_STORE, Cooldown.class), processor);
    }

    private static <V> StoreBuilder<KeyValueStore<String, V>> builder(String name, Class<V> type) {
        return Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(name), Serdes.String(), new JsonSerde<>(type))
                .withCachingEnabled();
    }

    static KeyValueStore<String, ShardBacklog> backlogs(ProcessorContext<?, ?> context) {
        return context.getStateStore(BACKLOG_STORE);
    }

    static KeyValueStore<String, Cooldown> cooldowns(ProcessorContext<?, ?> context) {
        return context.getStateStore(COOLDOWN_STORE);
    }
}
