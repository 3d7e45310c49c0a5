package dev.rolloutingest.table.merge;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.function.ToDoubleFunction;

/**
 * Gauges of bytes that sum one value over every table of a process: each table's object joins its registry's gauge
 * and leaves it when collected, so the series stays one, unlabelled by table.
 */
final class SummedGauges {
    private static final Map<MeterRegistry, Map<String, Set<Object>>> MEMBERS =
            Collections.synchronizedMap(new WeakHashMap<>());

    private SummedGauges() {}

    static <T> void add(MeterRegistry meters, String name, String description, T member, ToDoubleFunction<T> value) {
        Set<Object> members;
        synchronized (MEMBERS) {
            members = MEMBERS.computeIfAbsent(meters, m -> new HashMap<>()).computeIfAbsent(name, n -> {
                Set<Object> set = Collections.synchronizedSet(Collections.newSetFromMap(new WeakHashMap<>()));
                Gauge.builder(name, set, s -> sum(s, value))
                        .description(description)
                        .baseUnit("bytes")
                        .register(meters);
                return set;
            });
        }
        members.add(member);
    }

    @SuppressWarnings("unchecked")
    private static <T> double sum(Set<Object> members, ToDoubleFunction<T> value) {
        synchronized (members) {
            return members.stream().mapToDouble(m -> value.applyAsDouble((T) m)).sum();
        }
    }
}
