package dev.rolloutingest.testsupport;

import dev.rolloutingest.embedded.ApicurioRegistry;
import java.nio.file.Path;

/**
 * One registry for the test classes of a JVM whose subjects are their own (each run's topics are new): Apicurio takes
 * 5-7 s to start, a start per class was a minute of the suite per module. Started by the first class that asks,
 * stopped when the JVM exits (the registry's own exit hook). A class that registers under a fixed subject, changes a
 * compatibility rule or stops the registry starts its own.
 */
public final class SharedRegistry {
    private static ApicurioRegistry registry;

    private SharedRegistry() {}

    public static synchronized ApicurioRegistry get() {
        if (registry == null) {
            registry = ApicurioRegistry.start(
                    Path.of("target", "shared-registry").toAbsolutePath(), TestCluster.REGISTRY_START);
        }
        return registry;
    }
}
