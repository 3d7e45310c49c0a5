package dev.rolloutingest.testsupport;

import java.nio.file.Path;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link TestCluster} for one test class, started before its first test and stopped after its last:
 * {@code @RegisterExtension static final Services SERVICES = Services.under("it-snapshot");}.
 */
public final class Services implements BeforeAllCallback, AfterAllCallback {
    private final Path root;
    private final String bucket;
    private final boolean sharedRegistry;
    private TestCluster cluster;

    private Services(Path root, String bucket, boolean sharedRegistry) {
        this.root = root;
        this.bucket = bucket;
        this.sharedRegistry = sharedRegistry;
    }

    /** A broker and a registry under {@code target/<folder>}. */
    public static Services under(String folder) {
        return new Services(Path.of("target", folder).toAbsolutePath(), null, false);
    }

    /** A broker under {@code target/<folder>} and the JVM's {@link SharedRegistry} (see its terms). */
    public static Services sharingRegistry(String folder) {
        return new Services(Path.of("target", folder).toAbsolutePath(), null, true);
    }

    /** A broker, a registry and an S3 API server holding {@code bucket}, under {@code target/<folder>}. */
    public static Services withS3(String folder, String bucket) {
        return new Services(Path.of("target", folder).toAbsolutePath(), bucket, false);
    }

    /** Where the services keep their files; a test's own files go beside them. */
    public Path root() {
        return root;
    }

    public TestCluster cluster() {
        if (cluster == null) {
            throw new IllegalStateException("the services start before the class's first test");
        }
        return cluster;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        cluster = sharedRegistry ? TestCluster.startSharingRegistry(root) : TestCluster.start(root, bucket);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (cluster != null) {
            cluster.close();
            cluster = null;
        }
    }
}
