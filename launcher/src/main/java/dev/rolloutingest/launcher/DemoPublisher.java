package dev.rolloutingest.launcher;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The demo's producer, on a thread of its own: every rollout to one experiment, or with many tables a share to each
 * table's experiment ({@code experiment-0}, {@code experiment-1}, ...). Its error, if any, fails the demo.
 */
final class DemoPublisher {
    private final AtomicLong acked = new AtomicLong();
    private final AtomicReference<Throwable> error = new AtomicReference<>();
    private final Thread thread;

    DemoPublisher(
            String bootstrapServers,
            String registryUrl,
            String experiment,
            long records,
            int tables,
            int payloadBytes) {
        boolean many = tables > 1;
        this.thread = new Thread(
                () -> {
                    try {
                        RolloutPublisher rollouts = new RolloutPublisher(bootstrapServers, registryUrl);
                        if (!many) {
                            rollouts.publish("rollouts", experiment, records, records, payloadBytes, 0, acked);
                        }
                        for (int t = 0; many && t < tables; t++) {
                            long share = records / tables + (t < records % tables ? 1 : 0);
                            rollouts.publish("rollouts", experiment + "-" + t, share, share, payloadBytes, 0, acked);
                        }
                    } catch (Throwable e) {
                        error.set(e);
                    }
                },
                "demo-publisher");
    }

    void start() {
        thread.start();
    }

    /** Rollouts the broker acknowledged so far. */
    long acked() {
        return acked.get();
    }

    /** What stopped the publishing; null while it goes on or when it finished. */
    Throwable error() {
        return error.get();
    }
}
